import { X509Certificate } from 'node:crypto';

/**
 * Whether a connection's `idpCertificate` is one PEM X.509 certificate node could load. Only the
 * key inside is used (signatures are pinned to it); expiry is not judged, as identity providers
 * routinely keep signing with expired self-signed certificates.
 */
export function samlCertificateValid(pem: string): boolean {
  if (typeof pem !== 'string') return false;
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g);
  if (!blocks || blocks.length !== 1 || pem.replace(blocks[0], '').trim() !== '') return false;
  try {
    new X509Certificate(blocks[0]);
    return true;
  } catch {
    return false;
  }
}

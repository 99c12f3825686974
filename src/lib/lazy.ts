/**
 * A library loaded on its first use instead of at start. For libraries that only one route group
 * needs (SAML, OIDC, the public suffix list, the outbound HTTP client): a process that never
 * serves that group never holds their code and data, and the heap V8 keeps (and lets grow in
 * proportion under load) stays smaller. The first call pays the require (tens of milliseconds).
 *
 *   const saml = lazy(() => require('@node-saml/node-saml') as typeof import('@node-saml/node-saml'));
 *   … new (saml().SAML)(…)
 */
export function lazy<T>(load: () => T): () => T {
  let loaded: { value: T } | undefined;
  return () => (loaded ??= { value: load() }).value;
}

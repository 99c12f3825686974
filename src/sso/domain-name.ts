import { Invalid } from '../lib/errors';
import { lazy } from '../lib/lazy';

// The public suffix list (~0.5 MB of heap) is loaded when a domain is first claimed (src/lib/lazy.ts).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const tldts = lazy(() => require('tldts') as typeof import('tldts'));

/**
 * Mail domains anyone can get an address at: claiming one would let an organization take over
 * every user of the provider, so they are never verifiable. Second-level names are matched
 * under any public suffix (gmx.de, gmx.net, yandex.ru, yandex.com, …).
 */
const CONSUMER_DOMAINS = new Set([
  'gmail.com', 'googlemail.com', 'outlook.com', 'hotmail.com', 'hotmail.co.uk', 'hotmail.fr', 'live.com', 'live.co.uk',
  'live.fr', 'live.nl', 'live.de', 'msn.com', 'passport.com', 'yahoo.com', 'yahoo.co.uk', 'yahoo.co.jp', 'ymail.com', 'rocketmail.com', 'icloud.com',
  'me.com', 'mac.com', 'aol.com', 'aim.com', 'proton.me', 'protonmail.com', 'protonmail.ch', 'pm.me', 'tutanota.com',
  'tutanota.de', 'tuta.io', 'tuta.com', 'mail.ru', 'inbox.ru', 'list.ru', 'bk.ru', 'rambler.ru', 'qq.com', 'foxmail.com',
  '163.com', '126.com', 'yeah.net', 'sina.com', 'sohu.com', 'aliyun.com', 'naver.com', 'daum.net', 'hanmail.net',
  'zoho.com', 'zohomail.com', 'fastmail.com', 'fastmail.fm', 'hey.com', 'mail.com', 'email.com', 'usa.com',
  'web.de', 'freenet.de', 't-online.de', 'posteo.de', 'mailbox.org', 'orange.fr', 'wanadoo.fr', 'free.fr', 'laposte.net',
  'sfr.fr', 'libero.it', 'virgilio.it', 'seznam.cz', 'wp.pl', 'o2.pl', 'interia.pl', 'comcast.net', 'verizon.net',
  'att.net', 'sbcglobal.net', 'btinternet.com', 'sky.com', 'rediffmail.com', 'duck.com', 'hushmail.com', 'mailinator.com',
]);
const CONSUMER_NAMES_ANY_SUFFIX = new Set(['gmx', 'yandex', 'ya', 'yahoo', 'hotmail', 'outlook', 'gmail']);

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * The canonical form of a claimed domain (lower case, no trailing dot), or 400 naming `domain`:
 * an IP address, a name that is itself a public suffix (`com`, `co.uk`, `github.io`) or under no
 * known suffix (`corp.internal`), and consumer mail domains (or their subdomains) are refused.
 */
export function canonicalDomain(input: string, path: string[] = ['body', 'domain']): string {
  const name = input.trim().toLowerCase().replace(/\.$/, '');
  const refuse = (why: string) => Invalid.at(path, why);
  const labels = name.split('.');
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l)) || name.length > 253) throw refuse('must be a domain name such as example.com');
  const parsed = tldts().parse(name, { allowPrivateDomains: true });
  if (parsed.isIp) throw refuse('must be a domain name, not an IP address');
  if (parsed.hostname !== name) throw refuse('must be a domain name such as example.com');
  if (!parsed.isIcann && !parsed.isPrivate) throw refuse(`is not under a known public suffix`);
  if (!parsed.domain) throw refuse(`${name} is a public suffix, not a domain an organization can own`);
  if (CONSUMER_DOMAINS.has(parsed.domain) || CONSUMER_NAMES_ANY_SUFFIX.has(parsed.domainWithoutSuffix ?? '')) {
    throw refuse(`${parsed.domain} is a consumer mail domain; claim your organization's own domain`);
  }
  return name;
}

/** The domain part of an e-mail address, lower case (what verified domains are compared with). */
export function emailDomainOf(email: string): string {
  return email.slice(email.lastIndexOf('@') + 1).trim().toLowerCase().replace(/\.$/, '');
}

import { createHash } from 'node:crypto';
import type { Invalid } from '../lib/errors';
import { escapeHtml } from '../mail/templates';

/**
 * The pages the links in messages open (docs/mail.md#the-pages-links-open): small server-rendered forms
 * that work without JavaScript and load nothing from anywhere. Everything a user or an
 * organization wrote is escaped; the one style sheet is inline and allowed by its hash, so the
 * Content-Security-Policy can refuse every script, frame, image and connection.
 */
const STYLE = `
*{box-sizing:border-box}
body{margin:0;background:#f4f5f7;color:#1a1a1a;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif}
main{max-width:440px;margin:48px auto;padding:32px;background:#fff;border-radius:10px;box-shadow:0 1px 3px rgba(0,0,0,.12)}
h1{font-size:22px;margin:0 0 16px}
p{margin:0 0 16px}
label{display:block;font-weight:600;margin:0 0 4px}
input{display:block;width:100%;padding:10px 12px;margin:0 0 16px;border:1px solid #c4c8cf;border-radius:6px;font:inherit}
input[readonly]{background:#f0f1f3;color:#444}
button{display:block;width:100%;padding:11px;border:0;border-radius:6px;background:#1f4fd1;color:#fff;font:inherit;font-weight:600;cursor:pointer}
.error{padding:10px 12px;border-radius:6px;background:#fdecec;color:#8a1c1c}
.ok{padding:10px 12px;border-radius:6px;background:#e8f6ec;color:#14532d}
.muted{color:#555;font-size:14px}
ul{margin:0 0 16px;padding-left:20px}
fieldset{border:1px solid #c4c8cf;border-radius:6px;margin:0 0 16px;padding:8px 12px}
legend{font-weight:600;padding:0 4px}
.choice{display:flex;align-items:center;gap:8px;margin:4px 0}
.choice input{width:auto;margin:0}
.choice label{margin:0;font-weight:400}
button.secondary{margin-top:8px;background:#fff;color:#1f4fd1;border:1px solid #1f4fd1}
.code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:26px;letter-spacing:3px;text-align:center;text-transform:uppercase}
`.trim();

const STYLE_HASH = createHash('sha256').update(STYLE).digest('base64');

/** Only this page's own inline style; forms post back to this origin only; nothing may frame it. */
export const PAGE_CSP = [
  "default-src 'none'",
  `style-src 'sha256-${STYLE_HASH}'`,
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/** Headers of every page: no caching (a form carries a token), no referrer (the URL carries it). */
export const PAGE_HEADERS: Record<string, string> = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': PAGE_CSP,
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'x-robots-tag': 'noindex',
};

/** Marks text already escaped (a fragment built by these helpers). */
export interface Html {
  readonly html: string;
}

export const raw = (html: string): Html => ({ html });

/** A template literal that escapes every value that is not already `Html`. */
export function html(strings: TemplateStringsArray, ...values: (string | number | Html | Html[] | null | undefined)[]): Html {
  let out = strings[0]!;
  values.forEach((v, i) => {
    const part = v === null || v === undefined ? '' : Array.isArray(v) ? v.map((h) => h.html).join('') : typeof v === 'object' ? v.html : escapeHtml(String(v));
    out += part + strings[i + 1]!;
  });
  return raw(out);
}

export function page(title: string, body: Html, productName: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer"><title>${escapeHtml(title)} · ${escapeHtml(productName)}</title>
<style>${STYLE}</style></head>
<body><main>
${body.html}
</main></body></html>
`;
}

/** A message page: what happened, and what to do next. */
export function messagePage(title: string, kind: 'ok' | 'error', lines: string[], productName: string): string {
  return page(title, html`<h1>${title}</h1><p class="${kind}">${lines[0] ?? ''}</p>${lines.slice(1).map((l) => html`<p>${l}</p>`)}`, productName);
}

/** A refused input's problems as one sentence for a person (`must not be …` → `The password must not be …`). */
export function problemText(err: Invalid): string {
  const parts = err.details.map((d) => {
    const field = d.path[d.path.length - 1];
    return field && /^[a-z]/.test(d.message) ? `The ${field} ${d.message}` : d.message;
  });
  return `${parts.join('; ') || err.message}.`.replace(/\.\.$/, '.');
}

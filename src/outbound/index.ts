/**
 * Egress policy for tenant-supplied URLs (docs/egress.md#egress-policy): every HTTP call to a URL that came
 * from an API request (worker runtimeUrl, MCP endpoints, LLM providers, webhooks, SSO issuers) goes
 * through here. URLs from settings (SUITE_*_BASE_URL) are the operator's and use `deps.fetch`.
 *
 * How to use it:
 * 1. When the URL is written (create/update service function, before storing):
 *      checkTenantUrl(deps.outbound.policy, input.url, ['body', 'url'], { httpsOnly: true })
 *    throws 400 invalid_request naming the field for a non-http(s) URL, credentials in the URL or
 *    a literal disallowed address (`httpsOnly` for webhooks, LLM providers and SSO).
 * 2. When calling it:
 *      const res = await deps.outbound.request(url, { method: 'POST', headers, body, timeoutMs, maxBytes })
 *    → { status, headers, body: Buffer, text() }. The resolved address is checked at connect time
 *    (a name resolving to 127.0.0.1 is refused, nothing is sent), redirects are never followed (a
 *    3xx comes back as a status), the timeout bounds connect + headers + body, and the body is read
 *    with a cap. Failures throw OutboundError {kind: 'not_allowed' | 'timeout' | 'refused' |
 *    'unreachable' | 'too_large' | 'invalid_url', message}: map it to your route's upstream error,
 *    e.g. `new Upstream('llm_provider_error', \`The LLM provider ${err.message}.\`)`.
 *
 * OUTBOUND_ALLOWED_NETWORKS (settings.outboundAllowedNetworks, CIDRs) allows exactly those
 * networks; tests that talk to local fakes set it (test/support/app.ts LOCAL_FAKES).
 */
export { EgressPolicy, checkBrowserUrl, checkTenantUrl, parseAllowedNetworks, type UrlRules } from './policy';
export { createOutbound, OutboundError, type Outbound, type OutboundRequest, type OutboundResponse, type OutboundFailure, type OutboundOptions } from './client';

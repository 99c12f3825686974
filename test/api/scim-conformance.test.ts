import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import * as newman from 'newman';
import type { NewmanSummary } from 'newman';
import { createTestApp, type TestApp } from '../support/app';
import { scimClient, scimOrganization, type ScimOrg } from '../support/scim';
import { runRunscope, type RunscopeStep } from '../support/runscope';

/**
 * The request sequences identity providers publish to validate a SCIM endpoint, checked in as
 * published (test/fixtures/scim/README.md names their sources) and run as data against the
 * service over HTTP, each in an organization of its own:
 *
 * - Microsoft's SCIM reference collection, run by newman (Postman's runner) with its own test
 *   scripts: userName `UserName123`, a rename to `ryan3`, three users sharing one e-mail,
 *   `/Users/?filter=…`, unquoted filter values, `attributes=emails[type eq "work"]`…
 * - Okta's SCIM 2.0 spec test (Runscope), with the initial variables Okta's guide lists.
 *
 * Where the service deliberately answers otherwise, the expected failure is listed below with the
 * RFC section that allows it; any other failure, or a listed one that no longer fails, fails the test.
 */
const FIXTURES = join(__dirname, '..', 'fixtures', 'scim');
const fixture = (name: string) => JSON.parse(readFileSync(join(FIXTURES, name), 'utf8')) as Record<string, unknown>;

let t: TestApp;
let server: Server;
let base: string;
beforeAll(async () => {
  t = await createTestApp();
  server = createServer(t.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 300_000);
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await t.close();
});

/** Microsoft's collection: the expected failures, as `request name › test name`. */
const MICROSOFT_DEVIATIONS: Record<string, string> = {
  // The reference implementation serves its configuration at a route of its own; RFC 7644 §4
  // names the endpoint /ServiceProviderConfig (served, and checked by Okta's suite below).
  'Get ServiceProviderConfig › Status code is 200': 'RFC 7644 §4: the endpoint is /ServiceProviderConfig',
  'Get ServiceProviderConfig › Pach supported is true': 'RFC 7644 §4: the endpoint is /ServiceProviderConfig',
  // A successful PATCH answers 200 with the resource; RFC 7644 §3.5.2 lets the server return
  // either 200 with the resource or 204 (Entra and Okta accept both).
  'Patch user omalley new username › Status code is 204': 'RFC 7644 §3.5.2: 200 with the resource',
  'patch user omalley active with boolean › Status code is 204': 'RFC 7644 §3.5.2: 200 with the resource',
  // A member value that is no User of ours is refused and nothing changes (docs/scim.md#groups;
  // RFC 7644 §3.12 scimType invalidValue) rather than stored as a dangling reference.
  'Group patch add member › Status code is 204': 'RFC 7644 §3.12 invalidValue: "string id 1" is no User',
  'Group patch add member2 › Status code is 204': 'RFC 7644 §3.12 invalidValue: "string id 2" is no User',
  // The collection adds a member as {displayName: "new User", value} and looks for that name in
  // the Group; RFC 7643 §4.2 gives a member reference value, $ref and type, so a name the client
  // puts beside the id is not kept (the member's own displayName is on its User).
  'Get group by id › Body contians user': 'RFC 7643 §4.2: a member reference is value, $ref and type',
};

describe("Microsoft's SCIM reference collection (newman)", () => {
  let summary: NewmanSummary;
  beforeAll(async () => {
    const org = await scimOrganization(t, 'Microsoft validator');
    const collection = fixture('microsoft-scim-reference.postman_collection.json') as { item: { name: string }[] };
    // The reference implementation's own token endpoint is not SCIM (RFC 7644 §2 leaves
    // authentication to the service provider): the collection's bearer variable carries our token.
    const withoutTokenFolder = { ...collection, item: collection.item.filter((i) => i.name !== 'Get Token') };
    const { host, port } = new URL(base);
    summary = await new Promise<NewmanSummary>((resolve, reject) =>
      newman.run(
        {
          collection: withoutTokenFolder,
          envVar: [
            { key: 'Protocol', value: 'http' },
            { key: 'Server', value: host.split(':')[0]! },
            { key: 'Port', value: `:${port}` },
            { key: 'Api', value: 'scim/v2' },
            { key: 'token', value: org.token },
          ],
          reporters: [],
          timeoutRequest: 30_000,
        },
        (err, result) => (err ? reject(err) : resolve(result)),
      ),
    );
  }, 300_000);

  it('runs every request of the collection', () => {
    expect(summary.run.stats.requests.total).toBe(78);
    expect(summary.run.stats.assertions.total).toBeGreaterThan(100);
  });

  it('passes every test script of the collection but the listed deviations', () => {
    const failures = summary.run.failures.map((f) => `${f.source?.name ?? '?'} › ${f.error.test ?? f.error.message}`);
    const unexpected = failures.filter((f) => !(f in MICROSOFT_DEVIATIONS));
    const detail = unexpected.map((f) => {
      const name = f.split(' › ')[0];
      const execution = summary.run.executions.find((e) => e.item.name === name);
      return `${f}: ${execution?.request.method} ${execution?.request.url.toString()} → ${execution?.response?.code} ${String(execution?.response?.stream ?? '').slice(0, 300)}`;
    });
    expect(detail).toEqual([]);
    expect([...new Set(failures)].sort()).toEqual(Object.keys(MICROSOFT_DEVIATIONS).sort());
  });

  it('never answers 5xx', () => {
    expect(summary.run.executions.filter((e) => (e.response?.code ?? 0) >= 500).map((e) => e.item.name)).toEqual([]);
  });
});

describe("Okta's SCIM 2.0 spec test (Runscope)", () => {
  it('passes every assertion of the suite', async () => {
    const org: ScimOrg = await scimOrganization(t, 'Okta spec test');
    const scim = scimClient(t, org.token);
    // Okta's guide: "Create at least one user in your SCIM server before running" (and the Groups
    // step's script wants one Group).
    const seeded = await scim.post('/Users', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: 'first.user@okta-test.example', name: { givenName: 'First', familyName: 'User' }, emails: [{ value: 'first.user@okta-test.example', primary: true, type: 'work' }], active: true });
    expect(seeded.status).toBe(201);
    expect((await scim.post('/Groups', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: 'Okta testers' })).status).toBe(201);

    const suite = fixture('okta-scim-20-spec-test.json') as { steps: RunscopeStep[] };
    // The initial variables of Okta's guide (its Initial Script generates the random ones).
    const vars: Record<string, string> = {
      SCIMBaseURL: `${base}/scim/v2`,
      auth: `Bearer ${org.token}`,
      InvalidUserEmail: 'abcdefgh@example.com',
      randomEmail: 'Runscope300Hfluaklab151@example.com',
      randomFamilyName: 'Hfluaklab151',
      randomGivenName: 'Runscope300',
      randomUsername: 'Runscope300Hfluaklab151@example.com',
      randomUsernameCaps: 'RUNSCOPE300HFLUAKLAB151@EXAMPLE.COM',
      UserIdThatDoesNotExist: '010101001010101011001010101011',
    };
    const { failures, ran } = await runRunscope(suite.steps, vars, async (req) => {
      // A step without a Content-Type sends its body untyped (fetch would label a string text/plain).
      const typed = Object.keys(req.headers).some((h) => h.toLowerCase() === 'content-type');
      const body = req.body === undefined || typed ? req.body : new TextEncoder().encode(req.body);
      const res = await fetch(req.url, { method: req.method, headers: req.headers, body });
      return { status: res.status, text: await res.text() };
    });
    expect(ran.length).toBe(16);
    expect(failures).toEqual([]);
  });
});

import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createMarketplace, createOrganization, createTeamDirect, uniqueEmail } from '../support/factories';
import { newId } from '../../src/lib/ids';

/** A 400's message says what is allowed, in the request's own terms. */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('400 invalid_request messages', () => {
  it('inviting someone as owner names the roles that may be given', async () => {
    const owner = await createOrganization(t);
    const res = await t.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email: uniqueEmail(), role: 'owner' });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ path: ['body', 'role'], message: expect.stringContaining("must be one of the organization's roles other than owner") }]);
  });

  /** The details of a GET an organization's owner makes, which must be refused with 400. */
  const refused = async (url: string) => {
    const owner = await createOrganization(t);
    const res = await t.http.get(url).set(...bearer(owner.token));
    expect(res.status).toBe(400);
    return res.body.details as unknown;
  };

  it.each([
    ['an enum lists its values', '/v1/audit-logs/export?format=xml', ['query', 'format'], 'must be one of: "ndjson", "csv"'],
    ['a malformed id names its kind', '/v1/teams/team_123', ['path', 'teamId'], 'must be a team id (tem_ followed by 26 characters)'],
    ['an id of another kind names the kind', `/v1/mcp-connections/${newId('marketplace')}`, ['path', 'connectionId'], 'must be an MCP connection id (emc_ followed by 26 characters)'],
    ['a pattern says in words what it allows', '/v1/billing/usage?month=2026-13', ['query', 'month'], 'must be a month as YYYY-MM (e.g. 2026-01)'],
  ])('%s', async (_what, url, path, message) => {
    expect(await refused(url)).toEqual([{ path, message }]);
  });

  describe('a grant names exactly one target', () => {
    const grant = async (body: Record<string, unknown>) => {
      const owner = await createOrganization(t);
      const marketplace = await createMarketplace(t, owner.token);
      return t.http.post(`/v1/marketplaces/${marketplace.id}/access`).set(...bearer(owner.token)).send(body);
    };
    const target = 'must name exactly one target (orgMembershipId, teamId or orgWide true) besides role';

    it('two targets, or none, is one detail at the body saying which targets there are', async () => {
      for (const body of [{ orgMembershipId: newId('member'), teamId: newId('team'), role: 'viewer' }, { orgWide: true, teamId: newId('team'), role: 'viewer' }, { role: 'viewer' }, { orgWide: false, role: 'viewer' }]) {
        const res = await grant(body);
        expect([body, res.status, res.body.details]).toEqual([body, 400, [{ path: ['body'], message: target }]]);
      }
    });

    it('one target with a bad value names that field, not the shapes', async () => {
      const badTeam = await grant({ teamId: newId('marketplace'), role: 'viewer' });
      expect(badTeam.body.details).toEqual([{ path: ['body', 'teamId'], message: 'must be a team id (tem_ followed by 26 characters)' }]);
      const badRole = await grant({ orgWide: true, role: 'owner' });
      expect(badRole.body.details).toEqual([{ path: ['body', 'role'], message: 'must be one of: "viewer", "editor", "manager"' }]);
      const noRole = await grant({ orgMembershipId: newId('member') });
      expect(noRole.body.details).toEqual([{ path: ['body', 'role'], message: 'is required' }]);
      const extra = await grant({ orgWide: true, role: 'viewer', note: 'x' });
      expect(extra.body.details).toEqual([{ path: ['body', 'note'], message: 'is not allowed' }]);
    });

    it('a well-formed grant to a team passes the contract', async () => {
      const owner = await createOrganization(t);
      const member = await addMember(t, owner.organizationId);
      const team = await createTeamDirect(t, owner.organizationId, [member.memberId]);
      const marketplace = await createMarketplace(t, owner.token);
      const res = await t.http.post(`/v1/marketplaces/${marketplace.id}/access`).set(...bearer(owner.token)).send({ teamId: team, role: 'editor' });
      expect(res.status).toBe(201);
      expect(res.body.item).toMatchObject({ teamId: team, role: 'editor', orgWide: false, orgMembershipId: null });
    });
  });

  it('SSO sign-in starts by e-mail or by connection, not both', async () => {
    for (const body of [{}, { email: uniqueEmail(), connectionId: newId('ssoConnection') }]) {
      const res = await t.http.post('/v1/auth/sso/start').send(body);
      expect([body, res.status, res.body.details]).toEqual([body, 400, [{ path: ['body'], message: 'must give either email or connectionId, not both' }]]);
    }
  });
});

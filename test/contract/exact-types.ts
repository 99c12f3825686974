/**
 * Compile-time checks of the generated types (`npm run typecheck` compiles this file; nothing
 * runs it): a misspelt field of a declared shape must not compile, and error codes are unions.
 */
import type { components, operations } from '../../generated/api';

type OrgContext = components['schemas']['OrganizationContext'];

export function misspelt(ctx: OrgContext): unknown[] {
  return [
    // @ts-expect-error a field the organization does not declare
    ctx.organization.nmae,
    // @ts-expect-error a field the member does not declare
    ctx.currentMember.roel,
    // @ts-expect-error a field a team does not declare
    ctx.currentMemberTeams[0]?.nmae,
    ctx.organization.name,
  ];
}

type TeamConflict = operations['createTeam']['responses'][409]['content']['application/json']['error'];

export function exhaustive(code: TeamConflict): string {
  switch (code) {
    case 'team_name_taken':
      return code;
    default: {
      // Every code of the union is handled above: a new one makes this assignment fail.
      const none: never = code;
      return none;
    }
  }
}

type Manifest = components['schemas']['Manifest'];
type ScimSchema = components['schemas']['ScimSchema'];

/** Manifest sections and SCIM discovery fields read without a cast. */
export function readable(manifest: Manifest, schema: ScimSchema): unknown[] {
  return [manifest.setup['onInstall'], manifest.resources[0]?.['kind'], manifest.lifecycle['onInstall'], schema.attributes[0]?.mutability];
}

type GrantRequest = components['schemas']['GrantAccessRequest'];
type SsoStart = components['schemas']['StartSsoRequest'];

/** A body that takes exactly one of several shapes refuses a body of none of them. */
export function oneShape(): unknown[] {
  const team: GrantRequest = { teamId: 'tem_01h455vb4pex5vsknk084sn02q', role: 'viewer' };
  const orgWide: GrantRequest = { orgWide: true, role: 'manager' };
  // @ts-expect-error a grant without a target
  const noTarget: GrantRequest = { role: 'viewer' };
  // @ts-expect-error the org-wide shape is `orgWide: true` only
  const notOrgWide: GrantRequest = { orgWide: false, role: 'viewer' };
  // @ts-expect-error an SSO start needs an e-mail or a connection
  const noStart: SsoStart = { returnTo: 'https://app.example.com/after' };
  return [team, orgWide, noTarget, notOrgWide, noStart];
}

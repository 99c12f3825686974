import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * src/server/server.ts: requests and responses served by createAppServer share their hidden classes
 * across requests, as a plain Node server's do before Express re-parents them. The probe runs in a
 * child process because V8's intrinsics need --allow-natives-syntax. Its plain-server run is the
 * control: there Express's Object.setPrototypeOf leaves every request with a class of its own,
 * which is what made every property access on req/res a runtime lookup. Should a Node or Express
 * upgrade make the control share classes too, the workaround in src/server/server.ts is no longer
 * needed: measure scenario 1 without it before removing it.
 */
describe('createAppServer', () => {
  it('serves requests whose req/res keep one shared hidden class, with Express unchanged', async () => {
    const root = path.resolve(__dirname, '..', '..');
    const { stdout } = await promisify(execFile)(process.execPath, ['--allow-natives-syntax', '--require', 'tsx/cjs', 'test/seams/probes/hidden-classes.ts'], { cwd: root });
    const { appServer, plainServer } = JSON.parse(stdout) as Record<string, Record<string, unknown>>;
    expect(appServer).toEqual({ sameRequestClass: true, sameResponseClass: true, fastProperties: true, query: { a: '1' }, requestApp: true, responseApp: true });
    expect(plainServer).toMatchObject({ sameRequestClass: false, sameResponseClass: false, query: { a: '1' }, requestApp: true, responseApp: true });
  }, 30_000);
});

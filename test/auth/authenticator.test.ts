// createAuthenticator picks the identity provider of the config's auth section, or the dev identity.
import test from 'ava';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createAuthenticator } from '../../src/auth/authenticator.ts';
import { loadNodeConfig } from '../../src/config/load.ts';
import { Errors, OrchError } from '../../src/errors/catalog.ts';
import { makeTestIdp } from '../support/jwks.ts';

test('with auth.jwks_file, issuer and audience from the config are enforced', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-authcfg-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const idp = await makeTestIdp();
  const file = path.join(dir, 'node.yaml');
  await writeFile(
    file,
    `apiVersion: orch.dev/v1\nkind: NodeConfig\nspec:\n  auth: { issuer: ${idp.issuer}, audience: ${idp.audience}, jwks_file: env:JWKS }\n`,
  );
  const config = loadNodeConfig({ file, env: { JWKS: idp.jwksFile, ORCH_DATA_DIR: dir } });
  const auth = await createAuthenticator(config);
  t.is((await auth.authenticate(await idp.sign({ sub: 'u', tenant_id: 'acme' }), undefined)).tenantId, 'acme');
  const err = await t.throwsAsync(auth.authenticate(await idp.sign({ sub: 'u' }, { audience: 'other' }), undefined), { instanceOf: OrchError });
  t.is(err?.spec, Errors.UNAUTHENTICATED);
});

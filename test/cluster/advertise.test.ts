// The worker's advertised cluster address (src/cluster/advertise.ts) and the config key that sets it.
import test from 'ava';
import { advertisedAddress } from '../../src/cluster/advertise.ts';
import { loadNodeConfig } from '../../src/config/load.ts';

const head = 'apiVersion: orch.dev/v1\nkind: NodeConfig\nmetadata: { name: w }\nspec:\n';

test('the bind address, or the host name for a wildcard bind, with the bound port', (t) => {
  t.is(advertisedAddress({ bind: '10.9.8.7', boundPort: 5000 }), '10.9.8.7:5000');
  t.is(advertisedAddress({ bind: '0.0.0.0', boundPort: 5000, hostname: 'box' }), 'box:5000');
  t.is(advertisedAddress({ bind: '::', boundPort: 5000, hostname: 'box' }), 'box:5000');
  t.is(advertisedAddress({ bind: 'fd00::7', boundPort: 5000 }), '[fd00::7]:5000');
});

test('advertise_address wins over a wildcard bind: a host takes the bound port, host:port is used as given', (t) => {
  t.is(advertisedAddress({ bind: '0.0.0.0', boundPort: 5000, advertise: '10.1.2.3', hostname: 'box' }), '10.1.2.3:5000');
  t.is(advertisedAddress({ bind: '0.0.0.0', boundPort: 5000, advertise: 'worker-3.internal:6000' }), 'worker-3.internal:6000');
  t.is(advertisedAddress({ bind: '::', boundPort: 5000, advertise: 'fd00::9' }), '[fd00::9]:5000');
  t.is(advertisedAddress({ bind: '::', boundPort: 5000, advertise: '[fd00::9]' }), '[fd00::9]:5000');
  t.is(advertisedAddress({ bind: '::', boundPort: 5000, advertise: '[fd00::9]:7000' }), '[fd00::9]:7000');
});

test('spec.cluster.advertise_address is read from the file and a bad value is refused', (t) => {
  const config = loadNodeConfig({ text: `${head}  cluster: { advertise_address: "10.1.2.3:6000" }\n`, env: {}, cwd: '/srv', hostname: 'box' });
  t.is(config.cluster.advertise_address, '10.1.2.3:6000');
  t.is(loadNodeConfig({ text: `${head}  node: { role: worker }\n`, env: {}, cwd: '/srv', hostname: 'box' }).cluster.advertise_address, undefined);
  const err = t.throws(() => loadNodeConfig({ text: `${head}  cluster: { advertise_address: "http://x:1" }\n`, env: {}, cwd: '/srv', hostname: 'box' }));
  t.regex(err.message, /spec\.cluster\.advertise_address/);
});

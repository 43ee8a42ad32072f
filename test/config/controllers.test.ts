// spec.cluster.controller (docs/CONFIG.md, docs/CLUSTER.md "Several controllers"): one host:port, a YAML list, or a
// comma-separated string (in the file through env:NAME, or in ORCH_CLUSTER_CONTROLLER) all load as the ordered list
// a worker fails over along; a bad entry or a duplicate is one ConfigError line naming the key and the entry.
import test from 'ava';
import { Errors } from '../../src/errors/catalog.ts';
import { ConfigError } from '../../src/config/errors.ts';
import { loadNodeConfig } from '../../src/config/load.ts';

const HEAD = 'apiVersion: orch.dev/v1\nkind: NodeConfig\nmetadata: { name: w }\nspec:\n  node: { id: w, role: worker }\n';
const withController = (yaml: string): string => `${HEAD}  cluster: { controller: ${yaml} }\n`;

function load(text: string, env: Record<string, string> = {}): string[] | undefined {
  return loadNodeConfig({ text, env, hostname: 'h', cwd: '/tmp' }).cluster.controllers;
}

function fail(t: import('ava').ExecutionContext, text: string, env: Record<string, string> = {}): string {
  const err = t.throws(() => load(text, env), { instanceOf: ConfigError });
  t.is((err as ConfigError | undefined)?.spec, Errors.CONFIG_INVALID);
  t.false(err?.message.includes('\n'), `one line: ${err?.message}`);
  return err?.message ?? '';
}

test('one address, a list and a comma-separated string load as the ordered list', (t) => {
  t.deepEqual(load(withController('"ctl-a:50056"')), ['ctl-a:50056']);
  t.deepEqual(load(withController('["ctl-b:50056", "ctl-a:50056", "[::1]:7000"]')), ['ctl-b:50056', 'ctl-a:50056', '[::1]:7000'], 'the list keeps its order');
  t.deepEqual(load(`${HEAD}  cluster:\n    controller:\n      - ctl-a:1\n      - ctl-b:2\n`), ['ctl-a:1', 'ctl-b:2'], 'a block list');
  t.deepEqual(load(withController('env:CTLS'), { CTLS: 'ctl-a:50056, ctl-b:50056' }), ['ctl-a:50056', 'ctl-b:50056'], 'a comma-separated env:NAME value');
  t.is(load(`${HEAD}  cluster: { controller: env:CTLS }\n`), undefined, 'an unset env:NAME leaves the list absent');
  t.is(load(HEAD), undefined, 'no controller: absent');
});

test('ORCH_CLUSTER_CONTROLLER overrides the file with a comma-separated list, and is checked the same way', (t) => {
  t.deepEqual(load(withController('"ctl-a:1"'), { ORCH_CLUSTER_CONTROLLER: 'ctl-x:9,ctl-y:9' }), ['ctl-x:9', 'ctl-y:9']);
  t.deepEqual(loadNodeConfig({ text: HEAD, env: {}, overrides: { clusterController: 'ctl-z:3' } }).cluster.controllers, ['ctl-z:3'], 'the flag override');
  t.is(fail(t, HEAD, { ORCH_CLUSTER_CONTROLLER: 'ctl-x:9,ctl-x:9' }), 'config error: ORCH_CLUSTER_CONTROLLER: entry 2: duplicate controller "ctl-x:9"');
  t.is(fail(t, HEAD, { ORCH_CLUSTER_CONTROLLER: 'ctl-x' }), 'config error: ORCH_CLUSTER_CONTROLLER: must be host:port (got "ctl-x")');
});

test('every entry must be host:port with a dialable port', (t) => {
  t.is(fail(t, withController('["ctl-a:50056", "ctl-b"]')), 'config error: spec.cluster.controller[1]: must be host:port (got "ctl-b")');
  t.is(fail(t, withController('"ctl-a:50056,http://ctl-b:50056"')), 'config error: spec.cluster.controller (entry 2): must be host:port (got "http://ctl-b:50056")');
  t.is(fail(t, withController('"ctl-a:50056,"')), 'config error: spec.cluster.controller (entry 2): is empty; expected host:port');
  t.is(fail(t, withController('"ctl-a:0"')), 'config error: spec.cluster.controller: port must be 1..65535 (got "ctl-a:0")');
  t.is(fail(t, withController('["ctl-a:70000"]')), 'config error: spec.cluster.controller[0]: port must be 1..65535 (got "ctl-a:70000")');
  t.is(fail(t, withController('[ctl-a:1, 5]')), 'config error: spec.cluster.controller[1]: must be host:port');
  t.is(fail(t, withController('[]')), 'config error: spec.cluster.controller: must name at least one controller');
  t.is(fail(t, withController('50056')), 'config error: spec.cluster.controller: must be host:port, a list of host:port, or a comma-separated string of them');
  t.is(fail(t, withController('{ host: a }')), 'config error: spec.cluster.controller: must be host:port, a list of host:port, or a comma-separated string of them');
});

test('no controller twice (host names compared without case)', (t) => {
  t.is(fail(t, withController('["ctl-a:50056", "ctl-b:50056", "ctl-a:50056"]')), 'config error: spec.cluster.controller[2]: duplicate controller "ctl-a:50056"');
  t.is(fail(t, withController('"CTL-A:1, ctl-a:1"')), 'config error: spec.cluster.controller (entry 2): duplicate controller "ctl-a:1"');
  t.deepEqual(load(withController('["ctl-a:1", "ctl-a:2"]')), ['ctl-a:1', 'ctl-a:2'], 'same host, other port: two controllers');
});

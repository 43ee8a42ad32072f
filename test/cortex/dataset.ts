// A fixed corpus of error families for Cortex tests and bench/cortex.ts: each family is one real error with one
// solution, written several ways (paraphrases with different line numbers, paths, ids and addresses). Stored
// paraphrases of one family must collapse into one pattern; a held-out phrasing of each family (never stored)
// must find its family first. Some families are deliberately close (two missing modules, two KeyErrors) so the
// embedding has to tell them apart by the name that matters. Deterministic: a seeded generator, no randomness.
import { seeded } from '../support/seeded.ts'; // mulberry32: every run stores the same corpus

export interface Family {
  key: string;
  error_type: string;
  message: string;
  solution: string;
  /** Paraphrases that get stored. {n} {m} a number, {path} a file path, {hex} an address, {id} a UUID. */
  stored: string[];
  /** Held-out phrasings used as queries (never stored). */
  queries: string[];
}

export const FAMILIES: Family[] = [
  {
    key: 'py-module-requests',
    error_type: 'ModuleNotFoundError',
    message: "No module named 'requests'",
    solution: 'pip install requests (add it to requirements.txt)',
    stored: ["ModuleNotFoundError: No module named 'requests' in {path} line {n}", "import requests failed: ModuleNotFoundError No module named 'requests'", "Traceback line {n}: ModuleNotFoundError: No module named 'requests'"],
    queries: ["File {path}, line {n}, in <module> import requests ModuleNotFoundError: No module named 'requests'"],
  },
  {
    key: 'py-module-numpy',
    error_type: 'ModuleNotFoundError',
    message: "No module named 'numpy'",
    solution: 'pip install numpy',
    stored: ["ModuleNotFoundError: No module named 'numpy' in {path} line {n}", "import numpy failed: ModuleNotFoundError No module named 'numpy'", "Traceback line {n}: ModuleNotFoundError: No module named 'numpy'"],
    queries: ["File {path}, line {n}, in <module> import numpy as np ModuleNotFoundError: No module named 'numpy'"],
  },
  {
    key: 'py-keyerror-user-id',
    error_type: 'KeyError',
    message: "KeyError: 'user_id'",
    solution: "use payload.get('user_id') and validate the request body first",
    stored: ["KeyError: 'user_id' at {path}:{n}", "lookup of key 'user_id' in dict raised KeyError (line {n})", "Traceback {path} line {n} KeyError 'user_id'"],
    queries: ["dictionary has no key 'user_id': KeyError raised in handler {path} line {n}"],
  },
  {
    key: 'py-keyerror-email',
    error_type: 'KeyError',
    message: "KeyError: 'email'",
    solution: "fall back to record.get('email') and skip records without an email",
    stored: ["KeyError: 'email' at {path}:{n}", "lookup of key 'email' in dict raised KeyError (line {n})", "Traceback {path} line {n} KeyError 'email'"],
    queries: ["dictionary has no key 'email': KeyError raised in handler {path} line {n}"],
  },
  {
    key: 'py-none-attribute',
    error_type: 'AttributeError',
    message: "'NoneType' object has no attribute 'split'",
    solution: 'check the value for None before calling split (the regex match failed)',
    stored: ["AttributeError: 'NoneType' object has no attribute 'split' ({path}:{n})", "calling .split on None: AttributeError 'NoneType' object has no attribute 'split'", "line {n}: 'NoneType' object has no attribute 'split'"],
    queries: ["AttributeError at {path} line {n}: NoneType has no attribute split"],
  },
  {
    key: 'py-indent',
    error_type: 'IndentationError',
    message: 'unexpected indent',
    solution: 'use 4 spaces consistently; remove the stray indentation on the reported line',
    stored: ['IndentationError: unexpected indent ({path}, line {n})', 'File {path} line {n} IndentationError unexpected indent', 'python failed to parse: unexpected indent at line {n}'],
    queries: ['unexpected indent on line {n} of {path} (IndentationError)'],
  },
  {
    key: 'py-zero-division',
    error_type: 'ZeroDivisionError',
    message: 'division by zero',
    solution: 'guard the denominator: return 0 (or None) when the count is zero',
    stored: ['ZeroDivisionError: division by zero at {path}:{n}', 'average computation failed with ZeroDivisionError division by zero line {n}', 'Traceback line {n} ZeroDivisionError: division by zero'],
    queries: ['division by zero when computing mean of empty list ({path} line {n})'],
  },
  {
    key: 'py-json-decode',
    error_type: 'JSONDecodeError',
    message: 'Expecting value: line 1 column 1 (char 0)',
    solution: 'the response body was empty or HTML: check the status code before json.loads',
    stored: ['json.decoder.JSONDecodeError: Expecting value: line {n} column {m} (char 0)', 'JSONDecodeError Expecting value line {n} column {m} while parsing response', 'failed to decode JSON: Expecting value: line {n} column 1'],
    queries: ['json.loads raised JSONDecodeError: Expecting value at line {n} column {m} (char 0) on the API response'],
  },
  {
    key: 'py-recursion',
    error_type: 'RecursionError',
    message: 'maximum recursion depth exceeded',
    solution: 'rewrite the recursive traversal iteratively with an explicit stack',
    stored: ['RecursionError: maximum recursion depth exceeded in comparison ({path}:{n})', 'maximum recursion depth exceeded while calling a Python object line {n}', 'RecursionError max recursion depth exceeded at depth {n}'],
    queries: ['recursion depth exceeded (RecursionError) walking the tree in {path}'],
  },
  {
    key: 'node-cannot-find-module',
    error_type: 'MODULE_NOT_FOUND',
    message: "Cannot find module 'express'",
    solution: 'npm install express --save',
    stored: ["Error: Cannot find module 'express' Require stack: {path}", "node: Cannot find module 'express' (MODULE_NOT_FOUND) at {path}:{n}", "MODULE_NOT_FOUND Cannot find module 'express' imported from {path}"],
    queries: ["require('express') fails with Error: Cannot find module 'express' code MODULE_NOT_FOUND"],
  },
  {
    key: 'node-undefined-property',
    error_type: 'TypeError',
    message: "Cannot read properties of undefined (reading 'map')",
    solution: 'default the array: (items ?? []).map(...) and await the fetch before rendering',
    stored: ["TypeError: Cannot read properties of undefined (reading 'map') at {path}:{n}:{m}", "Cannot read properties of undefined reading 'map' in render ({path} line {n})", "Uncaught TypeError: Cannot read properties of undefined (reading 'map')"],
    queries: ["TypeError undefined reading 'map' when rendering list at {path}:{n}:{m}"],
  },
  {
    key: 'node-eaddrinuse',
    error_type: 'EADDRINUSE',
    message: 'listen EADDRINUSE: address already in use :::{n}',
    solution: 'another process holds the port: stop it or listen on port 0 / a configurable PORT',
    stored: ['Error: listen EADDRINUSE: address already in use :::{n}', 'server failed to start: EADDRINUSE address already in use 127.0.0.1:{n}', 'EADDRINUSE: port {n} already in use'],
    queries: ['listen failed, address already in use on port {n} (EADDRINUSE)'],
  },
  {
    key: 'node-econnrefused',
    error_type: 'ECONNREFUSED',
    message: 'connect ECONNREFUSED 127.0.0.1:5432',
    solution: 'the database is not running or not reachable: start it and check DATABASE_URL',
    stored: ['Error: connect ECONNREFUSED 127.0.0.1:{n}', 'connection refused ECONNREFUSED when connecting to 10.0.0.{m}:{n}', 'ECONNREFUSED connect to database at localhost:{n} failed'],
    queries: ['database connection refused: connect ECONNREFUSED 127.0.0.1:{n}'],
  },
  {
    key: 'ts-type-not-assignable',
    error_type: 'TS2322',
    message: "Type 'string' is not assignable to type 'number'",
    solution: 'parse the value with Number(...) or fix the declared type',
    stored: ["{path}({n},{m}): error TS2322: Type 'string' is not assignable to type 'number'.", "TS2322 Type 'string' is not assignable to type 'number' at {path}:{n}", "tsc: Type 'string' is not assignable to type 'number' (TS2322)"],
    queries: ["error TS2322 in {path} line {n}: string not assignable to number"],
  },
  {
    key: 'go-nil-pointer',
    error_type: 'panic',
    message: 'runtime error: invalid memory address or nil pointer dereference',
    solution: 'check the returned error before using the pointer; initialise the struct field',
    stored: ['panic: runtime error: invalid memory address or nil pointer dereference [signal SIGSEGV addr={hex} pc={hex}]', 'goroutine {n} [running]: nil pointer dereference at {path}:{n}', 'runtime error: invalid memory address or nil pointer dereference'],
    queries: ['go program panicked with nil pointer dereference (invalid memory address) at {path}:{n}'],
  },
  {
    key: 'go-unused-import',
    error_type: 'compile',
    message: '"fmt" imported and not used',
    solution: 'remove the unused import or use it; goimports fixes this',
    stored: ['{path}:{n}:{m}: "fmt" imported and not used', 'go build failed: "fmt" imported and not used at {path}:{n}', 'imported and not used: "fmt"'],
    queries: ['compile error "fmt" imported and not used in {path}'],
  },
  {
    key: 'rust-borrow',
    error_type: 'E0502',
    message: 'cannot borrow `v` as mutable because it is also borrowed as immutable',
    solution: 'end the immutable borrow before mutating: clone the value or restructure the loop',
    stored: ['error[E0502]: cannot borrow `v` as mutable because it is also borrowed as immutable --> {path}:{n}:{m}', 'E0502 cannot borrow v as mutable, also borrowed as immutable ({path} line {n})', 'borrow checker: cannot borrow `v` as mutable because it is also borrowed as immutable'],
    queries: ['rustc E0502: v borrowed as immutable so cannot borrow as mutable at {path}:{n}'],
  },
  {
    key: 'java-npe',
    error_type: 'NullPointerException',
    message: 'java.lang.NullPointerException: Cannot invoke "String.length()" because "name" is null',
    solution: 'validate the name parameter (Objects.requireNonNull) or use Optional',
    stored: ['Exception in thread "main" java.lang.NullPointerException: Cannot invoke "String.length()" because "name" is null at Main.java:{n}', 'java.lang.NullPointerException Cannot invoke String.length() because name is null (line {n})', 'NPE: Cannot invoke "String.length()" because "name" is null'],
    queries: ['NullPointerException at line {n}: cannot invoke String.length() because name is null'],
  },
  {
    key: 'sql-unique-violation',
    error_type: '23505',
    message: 'duplicate key value violates unique constraint "users_email_key"',
    solution: 'use INSERT ... ON CONFLICT (email) DO NOTHING or check for the user first',
    stored: ['ERROR: duplicate key value violates unique constraint "users_email_key" DETAIL: Key (email)=(a{n}@x.io) already exists.', 'SQLSTATE 23505 duplicate key value violates unique constraint users_email_key', 'insert failed: duplicate key violates unique constraint "users_email_key" (row {n})'],
    queries: ['postgres unique constraint users_email_key violated: duplicate key value on insert of user {n}'],
  },
  {
    key: 'sql-relation-missing',
    error_type: '42P01',
    message: 'relation "orders" does not exist',
    solution: 'run the migrations before starting the app (the orders table is created by migration 3)',
    stored: ['ERROR: relation "orders" does not exist at character {n}', 'SQLSTATE 42P01 relation orders does not exist', 'query failed: relation "orders" does not exist (position {n})'],
    queries: ['select from orders fails: relation "orders" does not exist (42P01)'],
  },
  {
    key: 'docker-permission',
    error_type: 'PermissionDenied',
    message: 'permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock',
    solution: 'add the user to the docker group or use the rootless podman socket via DOCKER_HOST',
    stored: ['Got permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock', 'docker: permission denied connecting to Docker daemon socket /var/run/docker.sock', 'permission denied: Docker daemon socket unix:///var/run/docker.sock (dial unix)'],
    queries: ['cannot connect to the Docker daemon socket: permission denied on /var/run/docker.sock'],
  },
  {
    key: 'oom-killed',
    error_type: 'OOMKilled',
    message: 'container killed: out of memory (exit code 137)',
    solution: 'raise spec.security.resources.memory or stream the input instead of loading it whole',
    stored: ['container {id} exited with code 137 OOMKilled out of memory', 'process killed: out of memory (OOMKilled), exit code 137', 'OOMKilled: container ran out of memory at {n} MiB'],
    queries: ['exit code 137: the container was OOMKilled, out of memory'],
  },
  {
    key: 'git-merge-conflict',
    error_type: 'MergeConflict',
    message: 'CONFLICT (content): Merge conflict in src/app.ts',
    solution: 'rebase onto main, resolve the conflict markers, then git add and continue',
    stored: ['CONFLICT (content): Merge conflict in {path}', 'Automatic merge failed; fix conflicts: CONFLICT (content) merge conflict in {path}', 'git merge: Merge conflict in {path} (content)'],
    queries: ['automatic merge failed with a content merge conflict in {path}'],
  },
  {
    key: 'ssl-cert',
    error_type: 'SSLError',
    message: 'certificate verify failed: unable to get local issuer certificate',
    solution: 'install the CA bundle (ca-certificates) or point SSL_CERT_FILE at it',
    stored: ['ssl.SSLCertVerificationError: certificate verify failed: unable to get local issuer certificate ({path}:{n})', 'SSLError CERTIFICATE_VERIFY_FAILED unable to get local issuer certificate for https://api.example.com', 'certificate verify failed: unable to get local issuer certificate'],
    queries: ['https request failed: SSL certificate verify failed, unable to get local issuer certificate'],
  },
  {
    key: 'timeout-http',
    error_type: 'Timeout',
    message: 'ReadTimeout: HTTPSConnectionPool read timed out (read timeout=10)',
    solution: 'raise the client timeout and retry with backoff; the upstream is slow',
    stored: ["requests.exceptions.ReadTimeout: HTTPSConnectionPool(host='api.example.com', port=443): Read timed out. (read timeout={n})", 'ReadTimeout read timed out after {n} seconds on HTTPSConnectionPool', 'HTTP read timed out (read timeout={n}) calling upstream'],
    queries: ['HTTPSConnectionPool read timed out (ReadTimeout, timeout={n}) calling the api'],
  },
];


const DIRS = ['src', 'app', 'lib', 'services/api', 'pkg/core', 'handlers', 'tmp/build', 'home/runner/work'];
const FILES = ['main', 'views', 'utils', 'handler', 'index', 'models', 'worker', 'client'];
const EXTS = ['py', 'ts', 'js', 'go', 'rs', 'java'];

export function fill(template: string, rnd: () => number): string {
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const hex = (): string => `0x${Math.floor(rnd() * 0xffffffff).toString(16).padStart(8, '0')}`;
  const uuid = (): string => {
    const h = (n: number): string => Array.from({ length: n }, () => Math.floor(rnd() * 16).toString(16)).join('');
    return `${h(8)}-${h(4)}-4${h(3)}-a${h(3)}-${h(12)}`;
  };
  return template
    .replaceAll('{path}', () => `/${pick(DIRS)}/${pick(FILES)}.${pick(EXTS)}`)
    .replaceAll('{n}', () => String(1 + Math.floor(rnd() * 9000)))
    .replaceAll('{m}', () => String(1 + Math.floor(rnd() * 120)))
    .replaceAll('{hex}', hex)
    .replaceAll('{id}', uuid);
}

export interface StoredCase {
  family: string;
  error_type: string;
  error_signature: string;
  error_message: string;
  solution_approach: string;
}

/** `count` stores cycling through the families and their paraphrases with fresh details each time. */
export function corpus(count: number, seed = 42): StoredCase[] {
  const rnd = seeded(seed);
  const out: StoredCase[] = [];
  for (let i = 0; i < count; i++) {
    const f = FAMILIES[i % FAMILIES.length]!;
    const template = f.stored[Math.floor(i / FAMILIES.length) % f.stored.length]!;
    out.push({ family: f.key, error_type: f.error_type, error_signature: fill(template, rnd), error_message: f.message, solution_approach: f.solution });
  }
  return out;
}

export interface QueryCase {
  family: string;
  error_type: string;
  error_signature: string;
}

/** The held-out query set: every family's query phrasings, with fresh details. */
export function queryCases(seed = 7): QueryCase[] {
  const rnd = seeded(seed);
  return FAMILIES.flatMap((f) => f.queries.map((q) => ({ family: f.key, error_type: f.error_type, error_signature: fill(q, rnd) })));
}

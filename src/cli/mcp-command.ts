// `orch mcp`: the tool catalog for desktop MCP clients on stdio. It proxies to a running node's /v1/mcp over
// Streamable HTTP with --token/ORCH_TOKEN, so the node verifies the token (dev identity or the configured identity
// provider) and applies the caller's security context; see docs/MCP.md. stdout carries the MCP protocol only.
import type { Command } from 'commander';
import { CliError } from './output.ts';

interface GlobalOpts {
  url?: string;
  token?: string;
}

export function registerMcpCommand(program: Command): void {
  program
    .command('mcp')
    .description("serve the node's tool catalog to a desktop MCP client on stdio (proxies to the node's /v1/mcp)")
    .action(async () => {
      const g = program.opts<GlobalOpts>();
      const url = (g.url ?? process.env.ORCH_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
      const token = g.token ?? process.env.ORCH_TOKEN;
      if (!token) throw new CliError('orch mcp needs a bearer token: --token or ORCH_TOKEN');
      // Loaded on use: other commands must not pay for the MCP SDK.
      const [{ StdioServerTransport }, { runProxy }] = await Promise.all([import('@modelcontextprotocol/sdk/server/stdio.js'), import('../mcp/proxy.ts')]);
      let proxy: { closed: Promise<void> };
      try {
        proxy = await runProxy({ url, token }, new StdioServerTransport());
      } catch (err) {
        throw new CliError(`cannot connect to ${url}/v1/mcp: ${(err as Error).message}`);
      }
      process.stderr.write(`orch mcp: serving ${url}/v1/mcp on stdio\n`);
      process.stdin.once('end', () => process.exit(0));
      await proxy.closed;
      process.exit(0);
    });
}

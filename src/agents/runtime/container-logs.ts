// The log of an exited container, streamed into two sinks (stdout, stderr). Read after the exit rather than followed
// during the run: podman's follow stream can end before the last lines of a short-lived container are delivered,
// while the log of an exited container is complete. The stream is never buffered whole, so memory stays at whatever
// the sinks keep. Shared by DockerRuntime.run (one-shot sandbox commands) and the workflow's Container state.
import type Docker from 'dockerode';
import type { Writable } from 'node:stream';

/** How long reading one log may take before it is cut off (a stuck stream must not hold the caller forever). */
const READ_LIMIT_MS = 30_000;

/**
 * Streams the log of the exited container `id` into `out` and `err` and resolves when the stream ends, closes or
 * fails, after READ_LIMIT_MS at most, or (when given) as soon as `enough()` is true after a chunk: a caller whose
 * sinks keep nothing more stops reading early. Rejects only when the log cannot be opened.
 */
export async function readExitedContainerLogs(docker: Docker, id: string, out: Writable, err: Writable, enough?: () => boolean): Promise<void> {
  const stream = await new Promise<NodeJS.ReadableStream>((resolve, reject) => {
    docker.modem.dial(
      {
        path: `/containers/${id}/logs?`,
        method: 'GET',
        isStream: true,
        statusCodes: { 200: true, 404: 'no such container', 500: 'server error' },
        options: { stdout: true, stderr: true, follow: false },
      },
      (e: unknown, data: unknown) => (e ? reject(e instanceof Error ? e : new Error(String(e))) : resolve(data as NodeJS.ReadableStream)),
    );
  });
  docker.modem.demuxStream(stream, out, err);
  await new Promise<void>((resolve) => {
    const timer = setTimeout(finish, READ_LIMIT_MS);
    function finish(): void {
      clearTimeout(timer);
      (stream as unknown as { destroy?: () => void }).destroy?.();
      resolve();
    }
    if (enough) {
      stream.on('data', () => {
        if (enough()) finish();
      });
    }
    stream.once('end', finish);
    stream.once('close', finish);
    stream.once('error', finish);
  });
}

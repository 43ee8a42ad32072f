// FsalExtensionService (proto/orch/fsal/v1/fsal_extension.proto, an orch extension beside the seed's FsalService): StatFs,
// and WriteStream, the Writes of one file as one bidi stream. A unary Write of 1 MiB cost grpc-js a call's set-up and
// teardown and the round trip before the next could start; over one stream the next message is on its way while
// this one is written, and its StorageEvent commits with its neighbours' (docs/BENCHMARKS.md, stop 36).
//
// Each message is FsalService.write, unchanged: authorization (the 1 s access cache), policy, access mode, exact
// quota, a StorageEvent. The messages are applied strictly one after the other, in the order received, so a file
// written through one stream is always a prefix of what was sent (test/fuse/crash.test.ts), and answered in that
// order once each one's event is committed. The first refusal (or a failed commit) ends the call with its status
// and `fsal-errno`; no message after it is applied.
import type { sendUnaryData, ServerDuplexStream, ServerUnaryCall } from '@grpc/grpc-js';
import type { FsalCaller, FsalService } from '../../fsal/service.ts';
import { UNDECODABLE } from '../../fsal/wire.ts';
import type { FsalExtensionServiceServer, StatFsRequest, StatFsResponse } from '../../gen/orch/fsal/v1/fsal_extension.js';
import type { WriteRequest, WriteResponse } from '../../gen/orch/fsal/v1/fsal.js';
import type { Logger } from '../../logging/logger.ts';
import { Errors, OrchError } from '../../errors/catalog.ts';
import { isServerFault } from './errors.ts';
import { fsalCallerOf, fsalGrpcError } from './fsal-handlers.ts';

type Decoded = WriteRequest | { [UNDECODABLE]: string };

export function fsalExtensionHandlers(fsal: FsalService, logger: Logger): FsalExtensionServiceServer {
  const log = logger.child({ component: 'grpc-fsal-extension' });
  return {
    // The volume's quota, usage and access mode for a mount's statfs (FsalService.statFs); refusals as a unary
    // FsalService call's, with `fsal-errno`.
    statFs(call: ServerUnaryCall<StatFsRequest, StatFsResponse>, callback: sendUnaryData<StatFsResponse>): void {
      fsal.statFs(fsalCallerOf(call), call.request).then(
        (res) => callback(null, res),
        (err: unknown) => {
          if (isServerFault(err)) log.error({ err }, 'FSAL statfs failed');
          callback(fsalGrpcError(err));
        },
      );
    },

    writeStream(call: ServerDuplexStream<WriteRequest, WriteResponse>): void {
      const caller: FsalCaller = fsalCallerOf(call);
      // `applying`: the previous message done on disk or refused; `answering`: its answer sent.
      let applying: Promise<boolean> = Promise.resolve(true);
      let answering: Promise<void> = Promise.resolve();
      let ended = false;
      const fail = (err: unknown): void => {
        if (ended) return;
        ended = true;
        if (isServerFault(err)) log.error({ err }, 'FSAL write stream failed');
        call.emit('error', fsalGrpcError(err));
      };
      call.on('data', (msg: Decoded) => {
        if (ended) return;
        const before = applying;
        let answer!: Promise<WriteResponse>;
        applying = before.then(
          (ok) =>
            new Promise<boolean>((resolve) => {
              // After a refusal nothing more of the stream is applied.
              if (!ok || ended) return resolve(false);
              if (UNDECODABLE in msg) {
                answer = Promise.reject(new OrchError(Errors.BAD_REQUEST, `request could not be decoded: ${msg[UNDECODABLE]}`));
                // Handled in its turn below (which may come later than the process's unhandled-rejection check).
                answer.catch(() => undefined);
                return resolve(false);
              }
              answer = fsal.writeInOrder(caller, msg, resolve);
              // A refusal before the Write was tried (ids, an outage's queue limit) never calls `resolve`.
              answer.catch(() => resolve(false));
            }),
        );
        const mine = applying;
        answering = answering.then(async () => {
          if (!(await mine) && answer === undefined) return;
          try {
            const res = await answer;
            if (!ended) call.write(res);
          } catch (err) {
            fail(err);
          }
        });
      });
      call.on('end', () => {
        // never-rejects: every step of `answering` catches its own failure.
        void answering.then(() => {
          if (ended) return;
          ended = true;
          call.end();
        });
      });
      // The client went away (cancelled, its deadline): apply nothing more of what it sent.
      call.on('error', () => {
        ended = true;
      });
      call.on('cancelled', () => {
        ended = true;
      });
    },
  };
}

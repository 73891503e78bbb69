/**
 * Branches of a session: fork it at a message or a checkpoint (a new session that shares the history up to
 * there, copy on write), rewind it to a message (what came after stays readable as a branch), and list the
 * sessions forked from it. Scoped as the other session routes: a session of another user or tenant is a 404.
 */
import { z } from 'zod';
import type { Session } from '../../core/model.js';
import { MAX_PAGE_LIMIT } from '../../store/types.js';
import { readScopeOf } from '../auth.js';
import type { RouteDeps, ZodApp } from '../deps.js';
import { idParam, SessionParams } from '../schemas.js';
import { ERRORS, etag, requireSession, SessionWithModelSchema } from './common.js';

/** A message seq: 0 (before the first message) up to the last one. */
const Seq = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/** Exactly one of `at_seq` and `checkpoint_id`: a 400 naming the field otherwise. */
function onePoint(
  body: { at_seq?: number | undefined; checkpoint_id?: string | undefined },
  ctx: z.RefinementCtx,
) {
  if (body.at_seq !== undefined && body.checkpoint_id !== undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['checkpoint_id'],
      message: 'give either at_seq or checkpoint_id, not both',
    });
  } else if (body.at_seq === undefined && body.checkpoint_id === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['at_seq'],
      message: 'required: the seq of the message to fork after (or a checkpoint_id)',
    });
  }
}

export function branchRoutes(app: ZodApp, { store, schemas, turns }: RouteDeps): void {
  const ForkBody = z
    .strictObject({
      /** The fork sees the session's messages 1..at_seq. */
      at_seq: Seq.optional(),
      /** A checkpoint of the session: the fork sees the messages written before it. */
      checkpoint_id: idParam('checkpoint').optional(),
      /** The fork's id (`sess_` + 26 characters); generated when absent. */
      id: idParam('session').optional(),
      /** The fork's sliding TTL; the original's when absent. */
      ttl_seconds: schemas.createSession.shape.ttl_seconds,
    })
    .superRefine(onePoint);
  const BranchesQuery = z.strictObject({
    /** 1..500; default 50. */
    limit: z.coerce.number().int().min(1).max(MAX_PAGE_LIMIT).optional(),
    /** `next_cursor` of the page before. */
    cursor: z.string().min(1).optional(),
  });
  const RewindBody = z.strictObject({
    /** The session continues after message `at_seq`. */
    at_seq: Seq,
    /** When given, the session's current version (else 409 version_conflict). */
    expected_version: z.number().int().min(1).optional(),
  });
  /** The session as the session routes answer it: with the model its turns run with. */
  const withModel = <T extends Session>(session: T): T & { model?: string } =>
    turns?.modelFor ? { ...session, model: turns.modelFor(session) } : session;

  app.post(
    '/v1/sessions/:id/fork',
    {
      schema: {
        tags: ['sessions'],
        params: SessionParams,
        body: ForkBody,
        response: { 201: SessionWithModelSchema, ...ERRORS },
      },
    },
    async (request, reply) => {
      const scope = readScopeOf(request.principal);
      await requireSession(store, scope, request.params.id);
      const fork = await store.forkSession(scope, request.params.id, request.body);
      return reply.status(201).header('etag', etag(fork.version)).send(withModel(fork));
    },
  );

  app.post(
    '/v1/sessions/:id/rewind',
    {
      schema: {
        tags: ['sessions'],
        params: SessionParams,
        body: RewindBody,
        response: {
          200: z.object({ session: SessionWithModelSchema, branch: SessionWithModelSchema }),
          ...ERRORS,
        },
      },
    },
    async (request, reply) => {
      const scope = readScopeOf(request.principal);
      const { session, branch } = await store.rewindSession(scope, request.params.id, request.body);
      return reply
        .header('etag', etag(session.version))
        .send({ session: withModel(session), branch: withModel(branch) });
    },
  );

  app.get(
    '/v1/sessions/:id/branches',
    {
      schema: {
        tags: ['sessions'],
        params: SessionParams,
        querystring: BranchesQuery,
        response: {
          200: z.object({ items: z.array(SessionWithModelSchema), next_cursor: z.string().nullable() }),
          ...ERRORS,
        },
      },
    },
    async (request) => {
      const scope = readScopeOf(request.principal);
      const page = await store.listBranches(scope, request.params.id, request.query);
      return { items: page.items.map(withModel), next_cursor: page.next_cursor };
    },
  );
}

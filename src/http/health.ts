import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import type { DatabaseHandle } from '../db/database.ts';
import { pendingMigrations } from '../db/migrate.ts';

export function registerHealthRoutes(app: FastifyInstance, database: DatabaseHandle): void {
  /** Alive: the process answers. Load balancers restart an instance that stops answering. */
  app.get('/healthz', async () => ({ status: 'ok' }));

  /** Ready: the database answers and every migration this build knows is applied. */
  app.get('/readyz', async (request, reply) => {
    try {
      await sql`select 1`.execute(database.db);
      const pending = await pendingMigrations(database.db);
      if (pending.length > 0) return reply.code(503).send({ status: 'migrations_pending', pending });
      return { status: 'ready' };
    } catch (error) {
      request.log.warn({ err: error }, 'readiness check failed');
      return reply.code(503).send({ status: 'database_unreachable' });
    }
  });
}

// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { Type } from 'typebox';
import { DeferredCompilation } from '../../src/http/deferred-compilation.ts';
import { deferredResponseSerializers } from '../../src/http/serialization.ts';
import { requestValidator } from '../../src/http/validation.ts';
import { startTestRuntime } from '../helpers/runtime.ts';

describe('schemas compiled on first use', () => {
  it('compile for every route and answer of the service', async (t) => {
    const runtime = await startTestRuntime(t);
    await runtime.app.ready();
    await runtime.app.compileDeferredSchemas();
  });

  it('report a schema that cannot compile by its route, and answer 500 there, not hang', async (t) => {
    const deferred = new DeferredCompilation();
    const app = Fastify({
      schemaController: { compilersFactory: { buildSerializer: deferredResponseSerializers(deferred) } },
    });
    t.after(() => app.close());
    app.setValidatorCompiler(requestValidator({ nullAsAbsent: () => false, deferred }));
    app.get('/fine', { schema: { response: { 200: Type.Object({ ok: Type.Boolean() }) } } }, async () => ({
      ok: true,
    }));
    app.get(
      '/broken',
      { schema: { querystring: Type.Object({ q: Type.Optional(Type.String({ pattern: '(' })) }) } },
      async () => ({}),
    );
    await app.ready();

    await assert.rejects(deferred.compileAll(), /the querystring of GET \/broken does not compile/);
    assert.equal((await app.inject('/broken?q=x')).statusCode, 500);
    const fine = await app.inject('/fine');
    assert.deepEqual([fine.statusCode, fine.json()], [200, { ok: true }]);
  });
});

import Fastify from 'fastify';

/**
 * A bare Fastify route answering `body` (a file's bytes) as JSON at `path`, in a process of its
 * own; prints its URL once it listens. Arguments: path, body file.
 */
const [path = '/', bodyFile = ''] = process.argv.slice(2);
const { readFileSync } = await import('node:fs');
const body = readFileSync(bodyFile, 'utf8');
const bare = Fastify();
bare.get(path, (_request, reply) => {
  reply.type('application/json; charset=utf-8').send(body);
});
console.log(await bare.listen({ host: '127.0.0.1', port: 0 }));
process.on('SIGTERM', () => void bare.close().then(() => process.exit(0)));

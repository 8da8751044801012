// boardgame.io's Server for the Escoba peer: default in-memory storage, the Lobby API
// and the socket.io transport on one port, bound to 127.0.0.1.
//
//   node server.js [PORT]        (or PORT=... node server.js; default 8000)
//
// PEER_STORAGE=flatfile PEER_DIR=/tmp/x: boardgame.io's FlatFile storage (node-persist: a file
// per match, rewritten on every move, through the OS's cache: written, not fsynced) instead of
// memory, as boardgame.io documents it for a server that keeps its matches.
//
// NODE_ENV defaults to production (as a deployment runs it: no per-move
// serialisability check, no INFO logging); set NODE_ENV to override.
'use strict';

process.env.NODE_ENV = process.env.NODE_ENV || 'production';

const { Server, Origins, FlatFile } = require('boardgame.io/server');
const { Escoba } = require('./game');

const port = Number(process.argv[2] || process.env.PORT || 8000);
const host = process.env.HOST || '127.0.0.1';

const storage = process.env.PEER_STORAGE || 'memory';
const options = { games: [Escoba], origins: [Origins.LOCALHOST] };
if (storage === 'flatfile') {
  if (!process.env.PEER_DIR) throw new Error('PEER_STORAGE=flatfile needs PEER_DIR');
  options.db = new FlatFile({ dir: process.env.PEER_DIR, logging: false });
} else if (storage !== 'memory') {
  throw new Error(`PEER_STORAGE must be memory or flatfile, not ${storage}`);
}
const server = Server(options);

// Server.run() calls app.listen(port, cb) with no host; the socket.io transport has
// replaced app.listen with app.server.listen(...args), so put the host in between.
const listen = server.app.listen;
server.app.listen = (p, cb) => listen.call(server.app, p, host, cb);

server.run({ port }).then(({ appServer }) => {
  const address = appServer.address();
  console.log(`peer server (${storage}) listening on ${address.address}:${address.port} pid ${process.pid}`);
});

for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => process.exit(0));

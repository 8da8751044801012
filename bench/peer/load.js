// Closed-loop two-player games against the boardgame.io peer server (server.js), a
// socket per player, timed from the send: what bench/games.py measures, for the peer.
//
//   node load.js --port P --server-pid PID [--games 100] [--duration 30] [--warmup 5]
//                [--think 0.5] [--seed peer]
//
// Opens --games matches through the Lobby API (create, then join as "0" and "1") and
// connects two boardgame.io Clients per match (SocketIO transport, one WebSocket each,
// with the credentials from the join). When a client's state says it is its turn, it
// waits a think time (uniform 0.5..1.5 x --think; 0 for none) and plays the first
// capture available, else lays its first card. The send time is kept by (match,
// stateID); the latency is the time until the OPPONENT client holds a state with a
// greater stateID (client.subscribe). A finished match is replaced by a new one, so
// --games stay live. After --warmup seconds, a window of --duration seconds: the moves
// sent in it, their latencies (heard up to 1 s after the window) and the server
// process's utime+stime from /proc/PID/stat over it. Prints ONE JSON line.
'use strict';

process.env.NODE_ENV = process.env.NODE_ENV || 'production';

const { performance } = require('perf_hooks');
const { Client } = require('boardgame.io/client');
const { SocketIO } = require('boardgame.io/multiplayer');
const { Escoba, chooseMove } = require('./game');
const { rng, CLK_TCK, cpuSplit } = require('./measure');

function parseArgs(argv) {
  const out = { port: 8000, games: 100, duration: 30, warmup: 5, think: 0.5, seed: 'peer', serverPid: 0 };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '').replace(/-(\w)/g, (_, c) => c.toUpperCase());
    if (!(key in out)) throw new Error(`unknown option ${argv[i]}`);
    out[key] = typeof out[key] === 'number' ? Number(argv[i + 1]) : argv[i + 1];
  }
  return out;
}

const args = parseArgs(process.argv.slice(2));
const base = `http://127.0.0.1:${args.port}`;

const random = rng(args.seed);


async function post(path, body) {
  const r = await fetch(base + path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!r.ok) throw new Error(`POST ${path}: ${r.status} ${await r.text()}`);
  return r.json();
}

// --- the closed loop -----------------------------------------------------------------

const stats = {
  measuring: false,
  sent: 0, // moves sent while measuring
  heard: [], // their latencies to the opponent's subscribe, ms
  heardSocket: [], // the same, to the opponent's socket.io message (before the client's reducer)
  started: 0,
  finished: 0,
  finishedInWindow: 0,
  startedInWindow: 0,
  errors: [],
  stopping: false,
};
const live = new Set();

async function openMatch(slot) {
  const { matchID } = await post('/games/escoba/create', { numPlayers: 2 });
  const creds = [];
  for (const playerID of ['0', '1']) {
    const joined = await post(`/games/escoba/${matchID}/join`, { playerID, playerName: `p${playerID}` });
    creds.push(joined.playerCredentials);
  }
  const match = { slot, matchID, clients: [], pending: null, scheduledFor: -1, done: false };
  stats.started += 1;
  if (stats.measuring) stats.startedInWindow += 1;
  for (const idx of [0, 1]) {
    const client = Client({
      game: Escoba,
      numPlayers: 2,
      matchID,
      playerID: String(idx),
      credentials: creds[idx],
      debug: false,
      multiplayer: SocketIO({ server: base, socketOpts: { transports: ['websocket'] } }),
    });
    match.clients.push(client);
  }
  live.add(match);
  match.clients.forEach((client, idx) => {
    client.subscribe((state) => onState(match, idx, state));
    client.start();
    // the moment the socket.io message reaches the transport, before the client's
    // reducer and subscribers (onAny listeners run before the named ones)
    client.transport.socket.onAny((event, ...rest) => onSocket(match, idx, event, rest));
  });
  return match;
}

function onSocket(match, idx, event, rest) {
  const p = match.pending;
  if (event !== 'update' || !p || p.by === idx || p.socketAt !== undefined) return;
  const state = rest[1];
  if (state && state._stateID > p.from) p.socketAt = performance.now();
}

function onState(match, idx, state) {
  if (state === null || match.done) return;
  const now = performance.now();
  const p = match.pending;
  if (p && p.by !== idx && state._stateID > p.from) {
    if (p.measured) {
      stats.heard.push(now - p.t);
      if (p.socketAt !== undefined) stats.heardSocket.push(p.socketAt - p.t);
    }
    match.pending = null;
  }
  if (state.ctx.gameover !== undefined) {
    if (!match.pending) finish(match);
    return;
  }
  const playerID = String(idx);
  if (state.ctx.currentPlayer !== playerID || match.pending || state._stateID <= match.scheduledFor) return;
  match.scheduledFor = state._stateID;
  const pause = args.think ? args.think * (0.5 + random()) * 1000 : 0;
  setTimeout(() => move(match, idx), pause);
}

function move(match, idx) {
  if (match.done || stats.stopping) return;
  const client = match.clients[idx];
  const state = client.getState();
  const playerID = String(idx);
  if (state.ctx.currentPlayer !== playerID || state.ctx.gameover !== undefined) return;
  const [card, capture] = chooseMove(state.G.hands[playerID], state.G.table);
  match.pending = { by: idx, from: state._stateID, t: performance.now(), measured: stats.measuring };
  if (stats.measuring) stats.sent += 1;
  client.moves.play(card, capture);
}

function finish(match) {
  match.done = true;
  live.delete(match);
  stats.finished += 1;
  if (stats.measuring) stats.finishedInWindow += 1;
  setImmediate(() => match.clients.forEach((c) => c.stop()));
  if (!stats.stopping) {
    openMatch(match.slot).catch((e) => stats.errors.push(String(e)));
  }
}

function percentile(values, p) {
  if (values.length === 0) return null;
  const ordered = [...values].sort((a, b) => a - b);
  // nearest rank, as bench/_common.py's percentile (Python's round: halves to even)
  const x = (p / 100) * (ordered.length - 1);
  let r = Math.round(x);
  if (Math.abs(x - Math.trunc(x)) === 0.5 && r % 2 !== 0) r -= 1;
  const k = Math.max(0, Math.min(ordered.length - 1, r));
  return ordered[k];
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const round = (x, n = 3) => (x === null ? null : Number(x.toFixed(n)));

async function main() {
  if (!args.serverPid) throw new Error('--server-pid is required (the server process to measure)');
  const matches = [];
  for (let slot = 0; slot < args.games; slot++) matches.push(await openMatch(slot));
  await sleep(args.warmup * 1000);

  const split0 = cpuSplit(args.serverPid);
  const self0 = process.cpuUsage();
  stats.measuring = true;
  const t0 = performance.now();
  await sleep(args.duration * 1000);
  stats.measuring = false;
  const seconds = (performance.now() - t0) / 1000;
  const split1 = cpuSplit(args.serverPid);
  const serverCpu = split1[0] - split0[0] + (split1[1] - split0[1]);
  const self = process.cpuUsage(self0);
  await sleep(1000); // let the last sockets hear
  stats.stopping = true;

  const n = stats.sent;
  const missing = n - stats.heard.length;
  const result = {
    peer: 'boardgame.io 0.50.2 (Node, in-memory store, socket.io)',
    games: args.games,
    moves: n,
    seconds: round(seconds, 2),
    moves_per_s: round(n / seconds, 1),
    p50_ms: round(percentile(stats.heard, 50)),
    p99_ms: round(percentile(stats.heard, 99)),
    mean_ms: round(stats.heard.reduce((a, b) => a + b, 0) / Math.max(1, stats.heard.length)),
    max_ms: round(stats.heard.length ? Math.max(...stats.heard) : null),
    socket_p50_ms: round(percentile(stats.heardSocket, 50)),
    socket_p99_ms: round(percentile(stats.heardSocket, 99)),
    // every latency, so that bench/games.py pools the rounds' moves as it pools its own
    heard_ms: stats.heard.map((x) => round(x)),
    heard_socket_ms: stats.heardSocket.map((x) => round(x)),
    missing,
    cpu_ms_per_move: round((serverCpu * 1000) / Math.max(1, n)),
    // user (the JavaScript, V8, its collector) and system (the kernel: sockets, epoll) apart
    cpu_user_ms_per_move: round(((split1[0] - split0[0]) * 1000) / Math.max(1, n)),
    cpu_system_ms_per_move: round(((split1[1] - split0[1]) * 1000) / Math.max(1, n)),
    server_cpu_s: round(serverCpu, 2),
    server_core_pct: round((serverCpu / seconds) * 100, 1),
    client_cpu_ms_per_move: round((self.user + self.system) / 1000 / Math.max(1, n)),
    matches_started_in_window: stats.startedInWindow,
    matches_finished_in_window: stats.finishedInWindow,
    matches_started: stats.started,
    think_s: args.think,
    warmup_s: args.warmup,
    clk_tck: CLK_TCK,
    server_pid: args.serverPid,
    node: process.version,
    errors: stats.errors.length,
    first_error: stats.errors[0] || null,
  };
  process.stdout.write(JSON.stringify(result) + '\n');
  for (const match of live) match.clients.forEach((c) => c.stop());
  setTimeout(() => process.exit(0), 200);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

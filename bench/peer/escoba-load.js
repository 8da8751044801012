// The open loop of bench/peer/load.js, against escoba: the same kind of client for both sides of
// bench/latency.py (one Node event loop), where bench/games.py's Python client (sender threads, a
// reader thread, the GIL) adds its own milliseconds to escoba's side.
//
//   node escoba-load.js PLAN.json
//
// bench/latency.py opens the tables and works out their games; the plan says, for each pair of
// players, the tables they play one after another (as load.js opens a new match when one ends: a
// game to 31 is some 350 to 600 moves, which the pairs played through inside a window at 0.75 load,
// and then offered nothing), each with its id, its two seat tokens, its moves ([seat, move, version
// after]) and the version before the first:
//   {"port", "server_pids": [...], "think", "warmup", "duration", "seed", "frames",
//    "pairs": [{"port"?, "tables": [{"id", "tokens": [t0, t1], "start_version", "moves": [[seat, move, version], ...]},
//                          ...]}]}
// When a table's last move is acked and heard, the pair closes its two sockets and opens two on its
// next table (the next table was opened before the run; load.js opens its next match in the window).
// A socket per player, as bench/games.py seat_sockets opens it: GET /tables/{id}/ws?token=T&frames=F
// (the token is the only auth; no hello), plain WebSocket, no compression offered (as the Python
// client and the page). When the mover's socket holds the version before move k (a "table" or
// "patch" frame of that version or later), it waits think x uniform(0.5, 1.5) and sends
// {"type":"move","id":"g.k","move":...}; the game's next move waits for this one's ack (one move in
// flight a game, as bench/games.py's Loop). An error, or an ack of another version, stops that game
// and is counted, with the first one's text. The latency: from just before the send to the
// opponent's socket's message event for a frame of the move's version or later (only the frame's
// head is read, for its version, as bench/_ws.py does).
//
// Stdout, one JSON line each: {"window":"start","t":...} when the warm-up ends, {"window":"end","t":...}
// when the window does (bench/latency.py samples Redis between them), then, 1 s later (the last
// frames heard), the result: the moves sent in the window, their spans [sent, heard, table, version] (a move's
// latency is heard - sent) and the window's t0/t1, in seconds of CLOCK_MONOTONIC (process.hrtime.bigint():
// libuv's uv_hrtime, clock_gettime(CLOCK_MONOTONIC) on Linux, as Python's time.perf_counter, so the
// spans line up with escoba's own stage timers), and the server's CPU over the window from /proc.
'use strict';

const fs = require('fs');
const WebSocket = require('ws');
const { rng, cpuSplit } = require('./measure');

const plan = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const now = () => Number(process.hrtime.bigint()) / 1e9; // CLOCK_MONOTONIC, seconds

const random = rng(String(plan.seed));

/** utime + stime of the processes so far, in seconds (a process gone is no longer counted, as
 * bench/_common.py's cpu_split). */
function cpuSeconds(pids) {
  let total = 0;
  for (const pid of pids) {
    try {
      const [user, system] = cpuSplit(pid);
      total += user + system;
    } catch {
      // gone
    }
  }
  return total;
}

const say = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

// --- the open loop ----------------------------------------------------------------------------

// a frame's head, as the server writes it (orjson, compact): {"type":"table"|"patch","version":N,...
const HEAD = /^\{"type": ?"(table|patch)", ?"version": ?(\d+)/;
// a move's answer: {"type":"ack","id","version"} or {"type":"error","id",...}
const ANSWER = /^\{"type":"(ack|error)","id":"([^"]*)"(?:,"version":(\d+))?/;

const stats = { measuring: false, stopping: false, sent: 0, spans: [], pending: [], errors: [], finished: 0,
  outOfTables: 0 };

const games = plan.pairs.map((pair, index) => ({
  index,
  port: pair.port || plan.port, // the pair's server (bench/latency.py --servers: one of several)
  tables: pair.tables,
  next: 0, // the next of its tables
  k: 0, // the next move
  pending: false, // the next move is scheduled or in flight
  stopped: false,
  moving: false, // between two tables: its old sockets closing, its new ones opening
  sockets: [null, null],
}));

/** The pair sits at its next table: its id, tokens, moves and where they start, nothing heard yet. */
function sitAtNext(game) {
  const t = game.tables[game.next];
  game.next += 1;
  Object.assign(game, {
    id: t.id, tokens: t.tokens, moves: t.moves, startVersion: t.start_version, k: 0, pending: false,
    heard: [-1, -1], // the highest version each seat's socket holds
    flight: null, // the move in flight: {k, version, opponent, t, measured, heardAt}
  });
}
games.forEach(sitAtNext);

function before(game, k) {
  return k === 0 ? game.startVersion : game.moves[k - 1][2];
}

function maybeSchedule(game) {
  if (game.moving || game.stopped || stats.stopping) return;
  if (game.k >= game.moves.length) {
    if (!game.flight || game.flight.heardAt !== null) moveOn(game);
    return;
  }
  if (game.pending) return;
  const seat = game.moves[game.k][0];
  if (game.heard[seat] < before(game, game.k)) return;
  game.pending = true;
  const k = game.k;
  const pause = plan.think ? plan.think * (0.5 + random()) * 1000 : 0;
  setTimeout(() => send(game, k), pause);
}

function send(game, k) {
  if (stats.stopping || game.stopped) return;
  const [seat, move, version] = game.moves[k];
  const frame = JSON.stringify({ type: 'move', id: `${game.index}.${k}`, move });
  const flight = { k, version, opponent: 1 - seat, t: now(), measured: stats.measuring, heardAt: null };
  game.flight = flight;
  if (flight.measured) {
    stats.sent += 1;
    stats.pending.push(flight);
  }
  game.sockets[seat].send(frame);
}

function onMessage(game, seat, data) {
  const at = now(); // the raw frame's arrival, before anything is parsed
  const head = data.toString('latin1', 0, Math.min(data.length, 96));
  const m = HEAD.exec(head);
  if (m) {
    const version = Number(m[2]);
    if (version > game.heard[seat]) game.heard[seat] = version;
    const f = game.flight;
    if (f && f.heardAt === null && seat === f.opponent && version >= f.version) {
      f.heardAt = at;
      if (f.measured) stats.spans.push([f.t, at, game.id, f.version]); // the table and version: the bench finds
      // the server's timers of this move by them
    }
    maybeSchedule(game);
    return;
  }
  const a = ANSWER.exec(head);
  if (!a) return;
  const k = Number(a[2].split('.')[1]);
  const expected = game.moves[k][2];
  if (a[1] !== 'ack' || Number(a[3]) !== expected) {
    stats.errors.push(`game ${game.index} move ${k}: ${data.toString('utf8', 0, 200)}`);
    if (game.flight && game.flight.k === k) game.flight.refused = true; // never heard, not missing
    game.stopped = true; // this game stops here
    return;
  }
  game.k = k + 1;
  game.pending = false;
  maybeSchedule(game);
}

function connect(game, seat) {
  const url = `ws://127.0.0.1:${game.port}/tables/${game.id}/ws?token=${game.tokens[seat]}&frames=${plan.frames}`;
  const table = game.id; // a socket of a table the pair has left says nothing more
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false, skipUTF8Validation: true });
    ws.on('message', (data) => {
      if (game.id === table) onMessage(game, seat, data);
    });
    ws.on('open', () => resolve(ws));
    ws.on('error', (e) => {
      if (ws.readyState === WebSocket.CONNECTING) reject(new Error(`${url}: ${e.message}`));
      else stats.errors.push(`game ${game.index} seat ${seat}: ${e.message}`);
    });
    ws.on('close', (code) => {
      if (!stats.stopping && !game.stopped && game.id === table) {
        stats.errors.push(`game ${game.index} seat ${seat}: closed (${code})`);
        game.stopped = true;
      }
    });
  });
}

/** The table's game is over (its last move acked and heard): the pair moves on to its next table. */
function moveOn(game) {
  stats.finished += 1;
  if (game.next >= game.tables.length) {
    game.stopped = true; // out of tables: counted, as a short script was before
    stats.outOfTables += 1;
    return;
  }
  game.moving = true;
  const old = game.sockets;
  sitAtNext(game);
  old.forEach((ws) => ws.close());
  Promise.all([0, 1].map((seat) => connect(game, seat)))
    .then((sockets) => {
      game.sockets = sockets;
      game.moving = false;
      maybeSchedule(game);
    })
    .catch((e) => {
      stats.errors.push(`game ${game.index}: ${e.message}`);
      game.stopped = true;
    });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  // one at a time, as bench/games.py seat_sockets connects them; the loop starts once all are open
  for (const game of games) {
    for (const seat of [0, 1]) game.sockets[seat] = await connect(game, seat);
  }
  games.forEach(maybeSchedule);
  await sleep(plan.warmup * 1000);

  const cpu0 = cpuSeconds(plan.server_pids);
  const self0 = process.cpuUsage();
  stats.measuring = true;
  const t0 = now();
  say({ window: 'start', t: t0 });
  await sleep(plan.duration * 1000);
  stats.measuring = false;
  const t1 = now();
  stats.stopping = true; // no move is sent after the window, as bench/games.py's Loop stops
  const serverCpu = cpuSeconds(plan.server_pids) - cpu0;
  const self = process.cpuUsage(self0);
  say({ window: 'end', t: t1 });
  await sleep(1000); // the last sockets hear

  const n = stats.sent;
  say({
    client: `node ${process.version}, ws ${require('ws/package.json').version}`,
    moves: n,
    t0,
    t1,
    spans: stats.spans,
    missing: stats.pending.filter((f) => f.heardAt === null && !f.refused).length,
    server_cpu_s: serverCpu,
    client_cpu_s: (self.user + self.system) / 1e6,
    finished: stats.finished,
    out_of_tables: stats.outOfTables,
    errors: stats.errors.length,
    first_error: stats.errors[0] || null,
  });
  for (const game of games) game.sockets.forEach((ws) => ws && ws.terminate());
  setTimeout(() => process.exit(0), 100);
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});

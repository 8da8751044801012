// A two-player Escoba round as a boardgame.io game: the peer of bench/games.py.
//
// The framework does per move what it would for a real card game of this size: a
// 40-card Spanish deck (values 1-10, suits o/c/e/b) shuffled in setup with
// boardgame.io's seeded random plugin, 3 cards to each hand and 4 to the table; the
// move play(card, capture) checks the capture sums to 15 with the card (or lays the
// card when capture is empty), returns INVALID_MOVE otherwise; when both hands are
// empty it deals 3 more each; the game ends (endIf) when deck and hands are done; the
// turn passes after every move; playerView hides the opponent's hand and the deck.
'use strict';

const { INVALID_MOVE } = require('boardgame.io/core');

const SUITS = ['o', 'c', 'e', 'b']; // oros, copas, espadas, bastos
const FULL_DECK = [];
for (const s of SUITS) for (let v = 1; v <= 10; v++) FULL_DECK.push(`${v}${s}`);

const value = (card) => parseInt(card, 10);

/** The first subset of `table` (in table order) whose values add up to `target`, or null. */
function firstSubset(table, target) {
  const pick = [];
  const walk = (start, left) => {
    if (left === 0) return pick.length > 0;
    for (let i = start; i < table.length; i++) {
      const v = value(table[i]);
      if (v > left) continue;
      pick.push(table[i]);
      if (walk(i + 1, left - v)) return true;
      pick.pop();
    }
    return false;
  };
  return walk(0, target) ? pick.slice() : null;
}

/**
 * The load client's legal move for a hand and table: the first capture available
 * (hand order, then table order), else lay the first card. [card, capture].
 */
function chooseMove(hand, table) {
  for (const card of hand) {
    const capture = firstSubset(table, 15 - value(card));
    if (capture) return [card, capture];
  }
  return [hand[0], []];
}

function deal(G) {
  for (const p of ['0', '1']) G.hands[p].push(...G.deck.splice(0, 3));
}

function play({ G, playerID }, card, capture) {
  const hand = G.hands[playerID];
  const at = hand.indexOf(card);
  if (at < 0 || !Array.isArray(capture)) return INVALID_MOVE;
  if (capture.length > 0) {
    if (new Set(capture).size !== capture.length) return INVALID_MOVE;
    let sum = value(card);
    for (const c of capture) {
      if (!G.table.includes(c)) return INVALID_MOVE;
      sum += value(c);
    }
    if (sum !== 15) return INVALID_MOVE;
  }
  hand.splice(at, 1);
  if (capture.length > 0) {
    G.table = G.table.filter((c) => !capture.includes(c));
    G.captured[playerID].push(card, ...capture);
    G.lastCapture = playerID;
    if (G.table.length === 0) G.escobas[playerID] += 1;
  } else {
    G.table.push(card);
  }
  if (G.hands['0'].length === 0 && G.hands['1'].length === 0) {
    if (G.deck.length > 0) {
      deal(G);
    } else {
      // the round is over: what is left on the table goes to the last to capture
      if (G.lastCapture !== null) G.captured[G.lastCapture].push(...G.table);
      G.table = [];
      G.over = true;
    }
  }
  return undefined;
}

const Escoba = {
  name: 'escoba',
  minPlayers: 2,
  maxPlayers: 2,

  setup: ({ random }) => {
    const deck = random.Shuffle(FULL_DECK);
    const G = {
      deck,
      hands: { 0: [], 1: [] },
      table: deck.splice(0, 4),
      captured: { 0: [], 1: [] },
      escobas: { 0: 0, 1: 0 },
      lastCapture: null,
      over: false,
    };
    deal(G);
    return G;
  },

  moves: {
    // client: false: the clients do not have the deck (playerView), so the move runs on
    // the server only and the clients take the server's state.
    play: { move: play, client: false },
  },

  turn: { minMoves: 1, maxMoves: 1 },

  endIf: ({ G }) => {
    if (!G.over) return undefined;
    const score = (p) => G.captured[p].length + G.escobas[p];
    const s0 = score('0');
    const s1 = score('1');
    return { scores: { 0: s0, 1: s1 }, winner: s0 === s1 ? undefined : s0 > s1 ? '0' : '1' };
  },

  playerView: ({ G, playerID }) => ({
    ...G,
    deck: G.deck.length,
    hands: {
      0: playerID === '0' ? G.hands['0'] : G.hands['0'].length,
      1: playerID === '1' ? G.hands['1'] : G.hands['1'].length,
    },
  }),
};

module.exports = { Escoba, FULL_DECK, chooseMove, firstSubset, value };

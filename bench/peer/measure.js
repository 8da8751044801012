// What both load programs (load.js for boardgame.io, escoba-load.js for escoba) share, so that the two
// sides are driven and measured alike: the seeded think times and a process's CPU from /proc.
'use strict';

const fs = require('fs');
const { execSync } = require('child_process');

/** A seeded uniform [0, 1) for the think times (mulberry32 over a string hash). */
function rng(seed) {
  let h = 1779033703;
  for (const ch of seed) h = Math.imul(h ^ ch.charCodeAt(0), 3432918353);
  let a = h >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function clockTicks() {
  try {
    return Number(execSync('getconf CLK_TCK').toString().trim()) || 100;
  } catch {
    return 100;
  }
}
const CLK_TCK = clockTicks();

/** [utime, stime] of a process so far, in seconds (fields 14 and 15 of /proc/PID/stat). */
function cpuSplit(pid) {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(')').pop().trim().split(/\s+/);
  return [Number(fields[11]) / CLK_TCK, Number(fields[12]) / CLK_TCK];
}

module.exports = { rng, CLK_TCK, cpuSplit };

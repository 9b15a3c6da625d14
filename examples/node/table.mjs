#!/usr/bin/env node
// A whole round played through the RoundService (shuangkou.v1.RoundService) with four 托管
// seats: deal, then for each turn SuggestAction -> ApplyAction with the state the last
// response returned, until the round is over. Prints one JSON document on stdout: the deal,
// every action as a replay action, and the settlement (RoundResult).
//
//   node table.mjs [ADDRESS] [--variant ID] [--seed N] [--stake N] [--deadline-ms MS]
//
// ADDRESS (or --address, or $SHUANGKOU_ADDR; default localhost:50051). The deal is a seeded
// shuffle of the variant's deck (built-in variants), the leader is seat seed % 4 and reveals
// its first card (three decks: the teams are stated instead). The table keeps only the
// state bytes between calls, as a game server would: any replica can answer any call.
// Exit status: 0 when the round was played out, 1 when a call failed, 2 on bad arguments.

import path from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PROTO_DIR = process.env.SHUANGKOU_PROTO_DIR ?? path.resolve(HERE, "../../protos");
const USAGE = "usage: node table.mjs [ADDRESS] [--variant ID] [--seed N] [--stake N] [--deadline-ms MS]";
const MAX_ACTIONS = 2000; // a round of 108 cards ends far sooner; a guard against a loop

// The decks of the built-in variants (RULES.md §3): copies of each suited card, the lowest
// natural rank position (3 = 0, 7 = 4), copies of each joker.
const DECKS = {
  baibian: [2, 0], fengkuang: [2, 0], bianfeng: [2, 0], bianfeng_lishui: [2, 0],
  qianbian: [2, 0], huopin: [2, 0], fengkuang_crazy: [3, 4],
};
const JOKER_COPIES = 2;
const SJ = 70;
const BJ = 75;

function parseCommandLine(argv) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      address: { type: "string" },
      variant: { type: "string", default: "baibian" },
      seed: { type: "string", default: "1" },
      stake: { type: "string", default: "1" },
      "deadline-ms": { type: "string", default: "5000" },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  if (positionals.length > 1) throw new Error(`unexpected arguments: ${positionals.slice(1).join(" ")}`);
  if (!(values.variant in DECKS)) throw new Error(`--variant must be one of ${Object.keys(DECKS).join(", ")}`);
  const [seed, stake, deadlineMs] = ["seed", "stake", "deadline-ms"].map((name) => {
    const n = Number(values[name]);
    if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be an integer >= 0, got ${values[name]}`);
    return n;
  });
  return {
    address: values.address ?? positionals[0] ?? process.env.SHUANGKOU_ADDR ?? "localhost:50051",
    variant: values.variant,
    seed,
    stake: Math.max(stake, 1),
    deadlineMs,
  };
}

// mulberry32: a small seeded generator, so a seed always deals the same round.
function generator(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Card codes (docs/design.md "Card codes"): 1 + rank * 5 + suit; jokers SJ = 70, BJ = 75.
function dealHands(variant, seed) {
  const [decks, lowest] = DECKS[variant];
  const deck = [];
  for (let rank = lowest; rank < 13; rank++) {
    for (let suit = 0; suit < 4; suit++) for (let d = 0; d < decks; d++) deck.push(1 + rank * 5 + suit);
  }
  for (let j = 0; j < JOKER_COPIES; j++) deck.push(SJ, BJ);
  const random = generator(seed);
  for (let i = deck.length - 1; i > 0; i--) {
    const k = Math.floor(random() * (i + 1));
    [deck[i], deck[k]] = [deck[k], deck[i]];
  }
  const size = deck.length / 4;
  return [0, 1, 2, 3].map((s) => deck.slice(s * size, (s + 1) * size).sort((x, y) => x - y));
}

function loadService() {
  const definition = protoLoader.loadSync("shuangkou/v1/rounds.proto", {
    includeDirs: [PROTO_DIR],
    keepCase: false, // camelCase fields: ruleSet, handSizes, ...
    longs: Number, // int64 scores as numbers: far below 2**53 here
    enums: Number, // card codes as numbers (what the request sends back); kinds converted below
    bytes: Buffer, // the state stays opaque bytes
    defaults: true,
    oneofs: false,
  });
  const pkg = grpc.loadPackageDefinition(definition).shuangkou.v1;
  return { RoundService: pkg.RoundService, enums: pkg };
}

function call(client, method, request, deadlineMs) {
  return new Promise((resolve, reject) => {
    client[method](request, { deadline: new Date(Date.now() + deadlineMs) }, (err, response) => {
      if (err) {
        const code = Object.keys(grpc.status).find((name) => grpc.status[name] === err.code) ?? String(err.code);
        reject(Object.assign(new Error(`${method}: ${code}: ${err.details ?? err.message}`), { code }));
      } else {
        resolve(response);
      }
    });
  });
}

// Enum numbers -> names in the printed output ("ACTION_TYPE_PLAY", "KIND_PAIR", "CARD_7S").
function enumName(enums, type, value) {
  const values = enums[type].type.value;
  return values.find((v) => v.number === value)?.name ?? String(value);
}

function cardText(enums, code) {
  return enumName(enums, "Card", code).replace(/^CARD_/, "");
}

async function playRound(client, args, enums) {
  const hands = dealHands(args.variant, args.seed);
  const leader = args.seed % 4;
  const ruleSet = { id: args.variant };
  const start = { ruleSet, hands: hands.map((cards) => ({ cards })), leader, stake: args.stake };
  const deal = { leader };
  if (DECKS[args.variant][0] === 2) {
    start.revealed = hands[leader][0];
    deal.revealed = cardText(enums, hands[leader][0]);
  } else {
    const others = [(leader + 1) % 4, (leader + 3) % 4];
    start.teams = [{ seats: [leader, (leader + 2) % 4] }, { seats: others }];
    deal.teams = [[leader, (leader + 2) % 4], others];
  }
  let { state } = await call(client, "StartRound", start, args.deadlineMs);
  const actions = [];
  let result = null;
  while (!state.view.over) {
    if (actions.length >= MAX_ACTIONS) throw new Error(`no end after ${MAX_ACTIONS} actions`);
    const hint = await call(client, "SuggestAction", { ruleSet, state: state.data }, args.deadlineMs);
    const done = await call(client, "ApplyAction", { ruleSet, state: state.data, action: hint.action }, args.deadlineMs);
    const a = hint.action;
    const action = { seat: a.seat, type: enumName(enums, "ActionType", a.type), reason: hint.reason };
    if (action.type === "ACTION_TYPE_PLAY") {
      action.cards = a.cards.cards.map((c) => cardText(enums, c));
      if (a.declaration) {
        action.declaration = { kind: enumName(enums, "Kind", a.declaration.kind) };
        if (a.declaration.top !== undefined) action.declaration.top = a.declaration.top;
        if (a.declaration.star !== undefined) action.declaration.star = a.declaration.star;
      }
    }
    actions.push(action);
    state = done.state;
    result = done.result;
  }
  result.kind = enumName(enums, "WinKind", result.kind);
  return {
    address: args.address,
    variant: args.variant,
    seed: args.seed,
    stake: args.stake,
    hands: hands.map((h) => h.map((c) => cardText(enums, c))),
    ...deal,
    actions,
    handAt: state.view.handAt,
    result,
  };
}

async function main() {
  let args;
  try {
    args = parseCommandLine(process.argv.slice(2));
  } catch (err) {
    console.error(`${err.message}\n${USAGE}`);
    process.exit(2);
  }
  const { RoundService, enums } = loadService();
  const client = new RoundService(args.address, grpc.credentials.createInsecure());
  try {
    const table = await playRound(client, args, enums);
    console.log(JSON.stringify(table, null, 2));
    const finals = table.result.seats.map((s) => s.final).join(" ");
    console.error(`${table.variant}: ${table.actions.length} actions, ${table.result.kind}, finals ${finals}`);
  } catch (err) {
    console.error(err.message);
    process.exitCode = 1;
  } finally {
    client.close();
  }
}

await main();

#!/usr/bin/env node
// Example Node.js client of the Shuangkou gRPC service (shuangkou.v1.ShuangkouService).
//
// Classifies a play, enumerates the legal plays of a hand and scores a round against a
// running server, and prints the three answers as one JSON document on stdout.
//
//   node client.mjs [ADDRESS] [--variant ID] [--play CARDS] [--hand CARDS] [--to-beat CARDS]
//                   [--page-size N] [--pages N] [--summary JSON] [--deadline-ms MS]
//
// ADDRESS (or --address, or $SHUANGKOU_ADDR; default localhost:50051) is any gRPC target:
// "host:port", or "dns:///shuangkou-headless:50051" to balance RPCs over every pod
// (round_robin, see docs/operations.md). The .proto files are read from ../../protos
// (override with $SHUANGKOU_PROTO_DIR), the google/rpc ones they import from
// ../../third_party/googleapis ($SHUANGKOU_GOOGLEAPIS_DIR). Legal plays come in pages
// (AIP-158): up to --pages pages of --page-size plays are read, following next_page_token.
// Exit status: 0 when every call succeeded, 1 when
// one failed (its entry then holds {"error": {code, message}}), 2 on bad arguments.

import path from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PROTO_DIR = process.env.SHUANGKOU_PROTO_DIR ?? path.resolve(HERE, "../../protos");
const GOOGLEAPIS_DIR = process.env.SHUANGKOU_GOOGLEAPIS_DIR ?? path.resolve(HERE, "../../third_party/googleapis");

// A round in which seats 0 and 2 finish first and second (双扣) and seat 0 played a
// seven-card bomb: RULES.md §10 gives baibian scores 44, -36, 28, -36.
const DEFAULT_SUMMARY = {
  finishOrder: [0, 2],
  bombs: [{ seat: 0, cards: { cardsText: "7777777" } }],
};

const USAGE = `usage: node client.mjs [ADDRESS] [--variant ID] [--play CARDS] [--hand CARDS]
                      [--to-beat CARDS] [--page-size N] [--pages N] [--summary JSON]
                      [--deadline-ms MS]`;

function parseCommandLine(argv) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      address: { type: "string" },
      variant: { type: "string", default: "baibian" },
      play: { type: "string", default: "7777 BJ" },
      hand: { type: "string", default: "3 4 5 6 7 7 7 7 8 9 BJ" },
      "to-beat": { type: "string", default: "" },
      "page-size": { type: "string", default: "20" },
      pages: { type: "string", default: "1" },
      summary: { type: "string" },
      "deadline-ms": { type: "string", default: "5000" },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  if (positionals.length > 1) throw new Error(`unexpected arguments: ${positionals.slice(1).join(" ")}`);
  const pageSize = Number(values["page-size"]);
  const pages = Number(values.pages);
  const deadlineMs = Number(values["deadline-ms"]);
  if (!Number.isInteger(pageSize) || pageSize < 0) {
    throw new Error(`--page-size must be an integer >= 0, got ${values["page-size"]}`);
  }
  if (!Number.isInteger(pages) || pages < 1) throw new Error(`--pages must be an integer >= 1, got ${values.pages}`);
  if (!Number.isInteger(deadlineMs) || deadlineMs <= 0) {
    throw new Error(`--deadline-ms must be a positive integer, got ${values["deadline-ms"]}`);
  }
  let summary = DEFAULT_SUMMARY;
  if (values.summary !== undefined) {
    try {
      summary = JSON.parse(values.summary);
    } catch (err) {
      throw new Error(`--summary is not JSON: ${err.message}`);
    }
  }
  return {
    address: values.address ?? positionals[0] ?? process.env.SHUANGKOU_ADDR ?? "localhost:50051",
    variant: values.variant,
    play: values.play,
    hand: values.hand,
    toBeat: values["to-beat"],
    pageSize,
    pages,
    summary,
    deadlineMs,
  };
}

function loadService() {
  const definition = protoLoader.loadSync("shuangkou/v1/service.proto", {
    includeDirs: [PROTO_DIR, GOOGLEAPIS_DIR],
    keepCase: false, // camelCase fields: finishOrder, cardsText, ...
    longs: Number, // int64/uint64 (scores, counts) as numbers: far below 2**53 here
    enums: String, // "KIND_BOMB", "CARD_7S"
    defaults: true, // unset scalars as 0/""/false; unset `optional` fields stay absent
    oneofs: false, // no virtual oneof-name fields (e.g. "_winningTeam") in the output
  });
  return grpc.loadPackageDefinition(definition).shuangkou.v1.ShuangkouService;
}

// Over several addresses (a headless Service), spread RPCs instead of pinning one pod.
const CHANNEL_OPTIONS = {
  "grpc.service_config": JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }),
};

function call(client, method, request, deadlineMs) {
  return new Promise((resolve) => {
    const deadline = new Date(Date.now() + deadlineMs);
    client[method](request, { deadline }, (err, response) => {
      if (err) {
        const code = Object.keys(grpc.status).find((name) => grpc.status[name] === err.code) ?? String(err.code);
        resolve({ error: { code, message: err.details ?? err.message } });
      } else {
        resolve(response);
      }
    });
  });
}

// Up to `pages` pages of legal plays: the same request again with each next_page_token (the
// token is tied to the other request fields; any server replica continues it). The result
// is the first page's response with the plays of every page read and the last page's token.
async function enumeratePages(client, request, pages, deadlineMs) {
  const first = await call(client, "EnumerateLegalPlays", request, deadlineMs);
  let last = first;
  let pagesRead = 1;
  while (pagesRead < pages && !last.error && last.nextPageToken) {
    last = await call(client, "EnumerateLegalPlays", { ...request, pageToken: last.nextPageToken }, deadlineMs);
    if (last.error) return last;
    first.plays.push(...last.plays);
    pagesRead += 1;
  }
  if (first.error) return first;
  return { ...first, nextPageToken: last.nextPageToken, pagesRead };
}

// "CARD_7S" -> "7S": the text notation of RULES.md §2.
const cardText = (card) => card.replace(/^CARD_/, "");

async function main() {
  let args;
  try {
    args = parseCommandLine(process.argv.slice(2));
  } catch (err) {
    console.error(`${err.message}\n${USAGE}`);
    process.exit(2);
  }
  const ShuangkouService = loadService();
  const client = new ShuangkouService(args.address, grpc.credentials.createInsecure(), CHANNEL_OPTIONS);
  const ruleSet = { ruleSet: { id: args.variant } };
  try {
    const classify = await call(client, "ClassifyPlay", { ...ruleSet, play: { cardsText: args.play } }, args.deadlineMs);
    const enumerate = await enumeratePages(client, {
      ...ruleSet,
      hand: { cardsText: args.hand },
      toBeat: { cardsText: args.toBeat },
      pageSize: args.pageSize,
      includeCounts: true,
      includeBestBomb: true,
    }, args.pages, args.deadlineMs);
    if (!enumerate.error) {
      for (const play of enumerate.plays) play.text = play.cards.map(cardText).join(" ");
    }
    const score = await call(client, "ScoreRound", { ...ruleSet, summary: args.summary }, args.deadlineMs);
    const output = {
      address: args.address,
      variant: args.variant,
      classify: { play: args.play, ...classify },
      enumerate: { hand: args.hand, toBeat: args.toBeat, ...enumerate },
      score: { summary: args.summary, ...score },
    };
    console.log(JSON.stringify(output, null, 2));
    process.exitCode = [classify, enumerate, score].some((r) => r.error) ? 1 : 0;
  } finally {
    client.close();
  }
}

await main();

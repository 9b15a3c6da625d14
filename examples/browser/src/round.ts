// A live round from a browser page through the service's HTTP port, on
// @connectrpc/connect-web with the messages and service descriptors buf generates from
// protos/ (../../buf.gen.yaml: protoc-gen-es). Built into dist/round.js by `npm run build`
// (esbuild), loaded by round.html; README.md says how to open it.
//
// The round goes over the Connect protocol; two calls go over gRPC-Web (the same generated
// client on another transport) to show that protocol's status. A refused move is read by its
// google.rpc.ErrorInfo reason (ConnectError.findDetails).

import { ConnectError, Code, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";

import { ErrorInfoSchema } from "./gen/google/rpc/error_details_pb.js";
import { RoundService } from "./gen/shuangkou/v1/rounds_pb.js";
import { ActionType, WinKindSchema } from "./gen/shuangkou/v1/scoring_pb.js";

const params = new URLSearchParams(location.search);
const api = (params.get("api") ?? "http://localhost:8080").replace(/\/$/, "");
const variant = params.get("variant") ?? "baibian";
const seedText = params.get("seed") ?? "a browser round";
const report = params.get("report");          // where to POST the outcome (tests)
const DEADLINE_MS = 5000;                     // every call carries a deadline

function log(line: string): void {
  document.getElementById("log")!.textContent += line + "\n";
}

const hex = (bytes: Uint8Array): string =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/** The machine reason of a failed call (google.rpc.ErrorInfo), e.g. NOT_YOUR_TURN. */
function reasonOf(error: ConnectError): string | undefined {
  return error.findDetails(ErrorInfoSchema)[0]?.reason;
}

/** A failure in one line; a fetch the browser refused is named as what it most often is. */
function explain(error: unknown): string {
  const failed = ConnectError.from(error);
  if (failed.cause instanceof TypeError) {
    // fetch() gives no reason when the browser blocks a cross-origin response (CORS): the
    // console shows it; the page can only say what to check.
    return `the browser could not call ${api} (${failed.cause.message}): the request was ` +
      `refused by CORS — start the server with --http-cors-origins ${location.origin} ` +
      `(localhost and 127.0.0.1 are different origins) — or nothing listens there`;
  }
  return `${Code[failed.code]}: ${failed.rawMessage}`;
}

function client(transport: Transport) {
  return createClient(RoundService, transport);
}

async function play() {
  const rounds = client(createConnectTransport({ baseUrl: api, defaultTimeoutMs: DEADLINE_MS }));
  const grpcWeb = client(createGrpcWebTransport({ baseUrl: api, defaultTimeoutMs: DEADLINE_MS }));
  // RuleSet's `id` and `custom_json` are a oneof: protobuf-es writes it as { case, value }.
  const ruleSet = { source: { case: "id" as const, value: variant } };
  const seed = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(seedText)));
  let state = (await rounds.startRound({ ruleSet, seed })).state!;
  const leader = state.view!.turn ?? 0;
  log(`dealt from seed sha256 ${hex(state.view!.seedSha256).slice(0, 16)}…: seat ${leader} leads`);

  // A move the rules refuse, over gRPC-Web: the leader may not pass.
  let grpcWebStatus = 0, grpcWebDetails = false;
  try {
    await grpcWeb.applyAction({ ruleSet, state: state.data,
                                action: { seat: leader, type: ActionType.PASS } });
  } catch (e) {
    const failed = ConnectError.from(e);
    grpcWebStatus = failed.code;
    grpcWebDetails = failed.details.length > 0;
    log(`gRPC-Web: ${Code[failed.code]} ${reasonOf(failed)}: ${failed.rawMessage}`);
  }
  // and one the rules take: the 托管 suggestion, over gRPC-Web
  const hinted = await grpcWeb.suggestAction({ ruleSet, state: state.data });

  // Then the round over Connect, a refused move read by its reason.
  let connectReason: string | undefined;
  try {
    await rounds.applyAction({ ruleSet, state: state.data,
                               action: { seat: (leader + 1) % 4, type: ActionType.PASS } });
  } catch (e) {
    const failed = ConnectError.from(e);
    if (failed.code !== Code.FailedPrecondition) throw failed;
    connectReason = reasonOf(failed);
    log(`Connect: ${Code[failed.code]} ${connectReason}: ${failed.rawMessage}`);
  }
  let reply;
  for (let i = 0; i < 500 && !state.view!.over; i++) {
    const hint = await rounds.suggestAction({ ruleSet, state: state.data });
    reply = await rounds.applyAction({ ruleSet, state: state.data, action: hint.action });
    state = reply.state!;
    if (reply.record?.finished !== undefined) {
      log(`seat ${reply.record.finished} went out (${hint.reason})`);
    }
  }
  const result = reply!.result!;
  const finals = result.seats.map((s) => Number(s.final));
  const kind = WinKindSchema.value[result.kind].name;
  log(`result: ${kind}, final ${JSON.stringify(finals)}`);
  return { over: state.view!.over, actions: state.view!.actionsApplied, kind, finals,
           grpcWebStatus, grpcWebDetails, grpcWebHint: hinted.reason, connectReason };
}

async function main(): Promise<void> {
  let outcome: object;
  try {
    outcome = await play();
  } catch (error) {
    const line = explain(error);
    log(`failed: ${line}`);
    outcome = { error: line };
  }
  if (report) await fetch(report, { method: "POST", body: JSON.stringify(outcome) });
}

void main();

// Example Java client of the Shuangkou gRPC service (shuangkou.v1.ShuangkouService).
//
// Classifies a play, compares it with the play standing on the table, enumerates the legal
// plays of a hand page by page and scores a round, and prints the four exchanges as one JSON
// document on stdout: for each step the request and the response (or the error), in the
// proto3 JSON mapping (camelCase names, enums by name, 64-bit integers as strings).
//
//   run.sh client [ADDRESS] [--variant ID] [--play CARDS] [--current CARDS] [--hand CARDS]
//                 [--to-beat CARDS] [--page-size N] [--pages N] [--summary JSON]
//                 [--deadline-ms MS]
//
// ADDRESS (or --address, or $SHUANGKOU_ADDR; default localhost:50051) is any gRPC target:
// "host:port", or "dns:///shuangkou-headless:50051" to balance calls over every pod
// (round_robin, docs/operations.md). Exit status: 0 when every call succeeded, 1 when one
// failed (its step then holds "error": code, message and the ErrorInfo reason), 2 on bad
// arguments.
package shuangkou.example;

import com.google.gson.GsonBuilder;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.MessageOrBuilder;
import com.google.protobuf.util.JsonFormat;
import com.google.rpc.BadRequest;
import com.google.rpc.ErrorInfo;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import shuangkou.v1.CardsOuterClass.Cards;
import shuangkou.v1.Scoring.RoundSummary;
import shuangkou.v1.Service.ClassifyPlayRequest;
import shuangkou.v1.Service.ComparePlaysRequest;
import shuangkou.v1.Service.EnumerateLegalPlaysRequest;
import shuangkou.v1.Service.EnumerateLegalPlaysResponse;
import shuangkou.v1.Service.ScoreRoundRequest;
import shuangkou.v1.ShuangkouServiceGrpc;
import shuangkou.v1.ShuangkouServiceGrpc.ShuangkouServiceBlockingStub;
import shuangkou.v1.Variants.RuleSet;

public final class Client {
  static final String USAGE =
      "usage: run.sh client [ADDRESS] [--variant ID] [--play CARDS] [--current CARDS]\n"
          + "                     [--hand CARDS] [--to-beat CARDS] [--page-size N] [--pages N]\n"
          + "                     [--summary JSON] [--deadline-ms MS]";

  // Seats 0 and 2 finish first and second (双扣) and seat 0 played a seven-card bomb:
  // RULES.md §10 gives baibian finals 44, -36, 28, -36.
  static final String DEFAULT_SUMMARY =
      "{\"finishOrder\": [0, 2], \"bombs\": [{\"seat\": 0, \"cards\": {\"cardsText\": \"7777777\"}}]}";

  // The proto3 JSON mapping; defaults printed, so that seat 0 and rank position 0 show.
  static final JsonFormat.Printer JSON = JsonFormat.printer().includingDefaultValueFields();

  record Args(String address, String variant, String play, String current, String hand,
      String toBeat, int pageSize, int pages, RoundSummary summary, long deadlineMs) {}

  private Client() {}

  static Args parse(String[] argv) {
    String address = null;
    String variant = "baibian";
    String play = "7777 BJ";
    String current = "8888";
    String hand = "3 4 5 6 7 7 7 7 8 9 BJ";
    String toBeat = "";
    String summary = DEFAULT_SUMMARY;
    long pageSize = 20;
    long pages = 1;
    long deadlineMs = 5000;
    for (int i = 0; i < argv.length; i++) {
      String arg = argv[i];
      if (!arg.startsWith("--")) {
        if (address != null) {
          throw new IllegalArgumentException("unexpected argument: " + arg);
        }
        address = arg;
        continue;
      }
      if (i + 1 == argv.length) {
        throw new IllegalArgumentException(arg + " needs a value");
      }
      String value = argv[++i];
      switch (arg) {
        case "--address" -> address = value;
        case "--variant" -> variant = value;
        case "--play" -> play = value;
        case "--current" -> current = value;
        case "--hand" -> hand = value;
        case "--to-beat" -> toBeat = value;
        case "--summary" -> summary = value;
        case "--page-size" -> pageSize = number(arg, value, 0);
        case "--pages" -> pages = number(arg, value, 1);
        case "--deadline-ms" -> deadlineMs = number(arg, value, 1);
        default -> throw new IllegalArgumentException("unknown option " + arg);
      }
    }
    RoundSummary.Builder round = RoundSummary.newBuilder();
    try {
      JsonFormat.parser().merge(summary, round);
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalArgumentException("--summary is not a RoundSummary: " + e.getMessage());
    }
    if (address == null) {
      address = System.getenv().getOrDefault("SHUANGKOU_ADDR", "localhost:50051");
    }
    return new Args(address, variant, play, current, hand, toBeat, (int) pageSize, (int) pages,
        round.build(), deadlineMs);
  }

  static long number(String option, String value, long min) {
    try {
      long n = Long.parseLong(value);
      if (n >= min && n <= Integer.MAX_VALUE) {
        return n;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new IllegalArgumentException(option + " must be an integer >= " + min + ", got " + value);
  }

  static JsonElement json(MessageOrBuilder message) {
    try {
      return JsonParser.parseString(JSON.print(message));
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalStateException(e);   // only for Any of an unknown type: none here
    }
  }

  /** A failed call as JSON: the status code and message, and the reason and field the
   * google.rpc.Status details carry (ErrorInfo, BadRequest). */
  static JsonObject error(StatusRuntimeException e) {
    JsonObject error = new JsonObject();
    error.addProperty("code", e.getStatus().getCode().name());
    error.addProperty("message", e.getStatus().getDescription());
    com.google.rpc.Status status = StatusProto.fromThrowable(e);
    for (Any detail : status == null ? List.<Any>of() : status.getDetailsList()) {
      try {
        if (detail.is(ErrorInfo.class)) {
          error.addProperty("reason", detail.unpack(ErrorInfo.class).getReason());
        } else if (detail.is(BadRequest.class)) {
          BadRequest bad = detail.unpack(BadRequest.class);
          for (BadRequest.FieldViolation violation : bad.getFieldViolationsList()) {
            error.addProperty("field", violation.getField());
          }
        }
      } catch (InvalidProtocolBufferException ignored) {
        // a detail that does not parse is left out
      }
    }
    return error;
  }

  /** One step of the output: the request, and the response or the error. */
  static JsonObject step(MessageOrBuilder request, Supplier<? extends MessageOrBuilder> call) {
    JsonObject step = new JsonObject();
    step.add("request", json(request));
    try {
      step.add("response", json(call.get()));
    } catch (StatusRuntimeException e) {
      step.add("error", error(e));
    }
    return step;
  }

  /** Up to `pages` pages of legal plays (AIP-158): the same request again with each
   * next_page_token, which is tied to the other request fields; any replica continues it.
   * The response is the first page with the plays of every page read and the last token. */
  static JsonObject enumerate(ShuangkouServiceBlockingStub stub, EnumerateLegalPlaysRequest request,
      int pages, long deadlineMs) {
    JsonObject step = new JsonObject();
    step.add("request", json(request));
    try {
      EnumerateLegalPlaysResponse page = call(stub, deadlineMs).enumerateLegalPlays(request);
      EnumerateLegalPlaysResponse.Builder all = page.toBuilder();
      int read = 1;
      while (read < pages && !page.getNextPageToken().isEmpty()) {
        page = call(stub, deadlineMs).enumerateLegalPlays(
            request.toBuilder().setPageToken(page.getNextPageToken()).build());
        all.addAllPlays(page.getPlaysList()).setNextPageToken(page.getNextPageToken());
        read++;
      }
      step.addProperty("pagesRead", read);
      step.add("response", json(all));
    } catch (StatusRuntimeException e) {
      step.add("error", error(e));
    }
    return step;
  }

  /** Every call carries a deadline; the server honours it. */
  static ShuangkouServiceBlockingStub call(ShuangkouServiceBlockingStub stub, long deadlineMs) {
    return stub.withDeadlineAfter(deadlineMs, TimeUnit.MILLISECONDS);
  }

  static Cards cards(String text) {
    return Cards.newBuilder().setCardsText(text).build();
  }

  public static void main(String[] argv) throws InterruptedException {
    Args args;
    try {
      args = parse(argv);
    } catch (IllegalArgumentException e) {
      System.err.println(e.getMessage() + "\n" + USAGE);
      System.exit(2);
      return;
    }
    // One channel for every call; round_robin spreads calls over every address the name
    // resolves to (a headless Service) instead of pinning one pod.
    ManagedChannel channel = ManagedChannelBuilder.forTarget(args.address())
        .usePlaintext()
        .defaultLoadBalancingPolicy("round_robin")
        .build();
    boolean failed;
    try {
      ShuangkouServiceBlockingStub stub = ShuangkouServiceGrpc.newBlockingStub(channel);
      long ms = args.deadlineMs();
      RuleSet ruleSet = RuleSet.newBuilder().setId(args.variant()).build();
      ClassifyPlayRequest classify = ClassifyPlayRequest.newBuilder()
          .setRuleSet(ruleSet).setPlay(cards(args.play())).build();
      ComparePlaysRequest compare = ComparePlaysRequest.newBuilder()
          .setRuleSet(ruleSet).setCurrent(cards(args.current())).setPlay(cards(args.play()))
          .build();
      EnumerateLegalPlaysRequest legal = EnumerateLegalPlaysRequest.newBuilder()
          .setRuleSet(ruleSet).setHand(cards(args.hand())).setToBeat(cards(args.toBeat()))
          .setPageSize(args.pageSize()).setIncludeCounts(true).setIncludeBestBomb(true).build();
      ScoreRoundRequest score = ScoreRoundRequest.newBuilder()
          .setRuleSet(ruleSet).setSummary(args.summary()).build();

      JsonObject out = new JsonObject();
      out.addProperty("address", args.address());
      out.addProperty("variant", args.variant());
      out.add("classify", step(classify, () -> call(stub, ms).classifyPlay(classify)));
      out.add("compare", step(compare, () -> call(stub, ms).comparePlays(compare)));
      out.add("enumerate", enumerate(stub, legal, args.pages(), ms));
      out.add("score", step(score, () -> call(stub, ms).scoreRound(score)));
      System.out.println(new GsonBuilder().setPrettyPrinting().disableHtmlEscaping().create()
          .toJson(out));
      failed = out.entrySet().stream().anyMatch(
          e -> e.getValue().isJsonObject() && e.getValue().getAsJsonObject().has("error"));
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    System.exit(failed ? 1 : 0);
  }
}

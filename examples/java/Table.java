// A whole round played through the RoundService (shuangkou.v1.RoundService) with four 托管
// seats: deal, then for each turn SuggestAction -> ApplyAction with the state the last
// response returned, until the round is over. Prints one JSON document on stdout: the deal,
// every action as a replay action, the move the rules refused, and the settlement
// (RoundResult, in the proto3 JSON mapping: 64-bit integers as strings).
//
//   run.sh table [ADDRESS] [--variant ID] [--seed N] [--stake N] [--deadline-ms MS]
//
// ADDRESS (or --address, or $SHUANGKOU_ADDR; default localhost:50051). The deal is a seeded
// shuffle of the variant's deck (built-in variants; the same generator as the Node.js
// table.mjs, so a seed deals the same round in every language), the leader is seat seed % 4
// and reveals its first card (three decks: the teams are stated instead). Before the first
// turn the seat after the one to act tries to play, as a client out of step would: the
// service refuses it (FAILED_PRECONDITION, ErrorInfo reason NOT_YOUR_TURN) and the table
// goes on with the state it holds. The table keeps only the state bytes between calls, as a
// game server would: any replica can answer any call.
// Exit status: 0 when the round was played out, 1 when a call failed, 2 on bad arguments.
package shuangkou.example;

import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.MessageOrBuilder;
import com.google.protobuf.util.JsonFormat;
import com.google.rpc.ErrorInfo;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import shuangkou.v1.CardsOuterClass.Card;
import shuangkou.v1.CardsOuterClass.Cards;
import shuangkou.v1.RoundServiceGrpc;
import shuangkou.v1.RoundServiceGrpc.RoundServiceBlockingStub;
import shuangkou.v1.Rounds.ApplyActionRequest;
import shuangkou.v1.Rounds.ApplyActionResponse;
import shuangkou.v1.Rounds.RoundAction;
import shuangkou.v1.Rounds.RoundState;
import shuangkou.v1.Rounds.StartRoundRequest;
import shuangkou.v1.Rounds.SuggestActionRequest;
import shuangkou.v1.Rounds.SuggestActionResponse;
import shuangkou.v1.Scoring.ActionType;
import shuangkou.v1.Scoring.RoundResult;
import shuangkou.v1.Scoring.Team;
import shuangkou.v1.Variants.RuleSet;

public final class Table {
  static final String USAGE =
      "usage: run.sh table [ADDRESS] [--variant ID] [--seed N] [--stake N] [--deadline-ms MS]";
  static final int MAX_ACTIONS = 2000;   // a round of 108 cards ends far sooner: a loop guard

  // The decks of the built-in variants (RULES.md §3): copies of each suited card and the
  // lowest natural rank position (3 = 0, 7 = 4); every deck has two of each joker.
  static final Map<String, int[]> DECKS = Map.of(
      "baibian", new int[] {2, 0}, "fengkuang", new int[] {2, 0},
      "bianfeng", new int[] {2, 0}, "bianfeng_lishui", new int[] {2, 0},
      "qianbian", new int[] {2, 0}, "huopin", new int[] {2, 0},
      "fengkuang_crazy", new int[] {3, 4});
  static final int JOKER_COPIES = 2;
  static final int SJ = 70;
  static final int BJ = 75;

  // Rule errors (docs/rounds.md "Errors a game server must handle"): the player's move is
  // refused and the state the table holds is still the current one. Any other failure
  // (ROUND_OVER, malformed input, transport) is not the player's and ends the run.
  static final Set<String> REFUSED_MOVES = Set.of("NOT_YOUR_TURN", "CARDS_NOT_HELD",
      "DOES_NOT_BEAT", "LEADER_MUST_PLAY", "NO_SUCH_READING", "SEAT_FINISHED",
      "ESCAPE_NOT_ALLOWED");

  static final JsonFormat.Printer JSON = JsonFormat.printer().includingDefaultValueFields();

  record Args(String address, String variant, long seed, long stake, long deadlineMs) {}

  /** A move the rules refused: the google.rpc.ErrorInfo reason and the status message. */
  static final class Refused extends Exception {
    private static final long serialVersionUID = 1L;
    final String reason;

    Refused(String reason, String message) {
      super(message);
      this.reason = reason;
    }
  }

  private Table() {}

  static Args parse(String[] argv) {
    String address = null;
    String variant = "baibian";
    long seed = 1;
    long stake = 1;
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
        case "--seed" -> seed = number(arg, value);
        case "--stake" -> stake = number(arg, value);
        case "--deadline-ms" -> deadlineMs = number(arg, value);
        default -> throw new IllegalArgumentException("unknown option " + arg);
      }
    }
    if (!DECKS.containsKey(variant)) {
      throw new IllegalArgumentException("--variant must be one of " + DECKS.keySet());
    }
    if (address == null) {
      address = System.getenv().getOrDefault("SHUANGKOU_ADDR", "localhost:50051");
    }
    return new Args(address, variant, seed, Math.max(stake, 1), Math.max(deadlineMs, 1));
  }

  static long number(String option, String value) {
    try {
      long n = Long.parseLong(value);
      if (n >= 0 && n <= 0xFFFFFFFFL) {
        return n;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new IllegalArgumentException(option + " must be an integer >= 0, got " + value);
  }

  /** mulberry32, a small seeded generator: the same numbers as table.mjs for a seed. */
  static final class Mulberry32 {
    private int state;

    Mulberry32(long seed) {
      state = (int) seed;
    }

    double next() {
      state += 0x6d2b79f5;
      int t = state;
      t = (t ^ (t >>> 15)) * (t | 1);
      t ^= t + (t ^ (t >>> 7)) * (t | 61);
      return Integer.toUnsignedLong(t ^ (t >>> 14)) / 4294967296.0;
    }
  }

  /** The four hands, sorted, of a seeded shuffle. Card codes (docs/design.md "Card codes"):
   * 1 + rank * 5 + suit; jokers SJ = 70, BJ = 75. */
  static int[][] deal(String variant, long seed) {
    int decks = DECKS.get(variant)[0];
    int lowest = DECKS.get(variant)[1];
    List<Integer> deck = new ArrayList<>();
    for (int rank = lowest; rank < 13; rank++) {
      for (int suit = 0; suit < 4; suit++) {
        for (int d = 0; d < decks; d++) {
          deck.add(1 + rank * 5 + suit);
        }
      }
    }
    for (int j = 0; j < JOKER_COPIES; j++) {
      deck.add(SJ);
      deck.add(BJ);
    }
    Mulberry32 random = new Mulberry32(seed);
    for (int i = deck.size() - 1; i > 0; i--) {
      int k = (int) Math.floor(random.next() * (i + 1));
      deck.set(k, deck.set(i, deck.get(k)));
    }
    int size = deck.size() / 4;
    int[][] hands = new int[4][];
    for (int s = 0; s < 4; s++) {
      hands[s] = deck.subList(s * size, (s + 1) * size).stream().mapToInt(Integer::intValue)
          .sorted().toArray();
    }
    return hands;
  }

  static String cardText(int code) {
    Card card = Card.forNumber(code);
    return card == null ? String.valueOf(code) : card.name().substring("CARD_".length());
  }

  static JsonArray texts(List<Integer> codes) {
    JsonArray out = new JsonArray();
    codes.forEach(c -> out.add(cardText(c)));
    return out;
  }

  static JsonElement json(MessageOrBuilder message) {
    try {
      return JsonParser.parseString(JSON.print(message));
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The google.rpc.ErrorInfo reason of a failed call ("" when it carries none). */
  static String reason(StatusRuntimeException e) {
    com.google.rpc.Status status = StatusProto.fromThrowable(e);
    for (Any detail : status == null ? List.<Any>of() : status.getDetailsList()) {
      if (detail.is(ErrorInfo.class)) {
        try {
          return detail.unpack(ErrorInfo.class).getReason();
        } catch (InvalidProtocolBufferException ignored) {
          return "";
        }
      }
    }
    return "";
  }

  /** ApplyAction, with a refused move told apart by its ErrorInfo reason. */
  static ApplyActionResponse apply(RoundServiceBlockingStub stub, RuleSet ruleSet,
      RoundState state, RoundAction action) throws Refused {
    try {
      return stub.applyAction(ApplyActionRequest.newBuilder()
          .setRuleSet(ruleSet).setState(state.getData()).setAction(action).build());
    } catch (StatusRuntimeException e) {
      String reason = reason(e);
      if (REFUSED_MOVES.contains(reason)) {
        throw new Refused(reason, e.getStatus().getDescription());
      }
      throw e;
    }
  }

  static JsonObject playRound(ManagedChannel channel, Args args) throws Refused {
    RoundServiceBlockingStub rounds = RoundServiceGrpc.newBlockingStub(channel);
    RuleSet ruleSet = RuleSet.newBuilder().setId(args.variant()).build();
    int[][] hands = deal(args.variant(), args.seed());
    int leader = (int) (args.seed() % 4);

    JsonObject out = new JsonObject();
    out.addProperty("address", args.address());
    out.addProperty("variant", args.variant());
    out.addProperty("seed", args.seed());
    out.addProperty("stake", args.stake());
    JsonArray dealt = new JsonArray();
    StartRoundRequest.Builder start = StartRoundRequest.newBuilder()
        .setRuleSet(ruleSet).setLeader(leader).setStake(args.stake());
    for (int[] hand : hands) {
      List<Integer> codes = Arrays.stream(hand).boxed().toList();
      start.addHands(Cards.newBuilder().addAllCardsValue(codes));
      dealt.add(texts(codes));
    }
    out.add("hands", dealt);
    out.addProperty("leader", leader);
    if (DECKS.get(args.variant())[0] == 2) {
      start.setRevealedValue(hands[leader][0]);
      out.addProperty("revealed", cardText(hands[leader][0]));
    } else {
      int[][] teams = {{leader, (leader + 2) % 4}, {(leader + 1) % 4, (leader + 3) % 4}};
      JsonArray teamsJson = new JsonArray();
      for (int[] team : teams) {
        start.addTeams(Team.newBuilder().addSeats(team[0]).addSeats(team[1]));
        JsonArray seats = new JsonArray();
        seats.add(team[0]);
        seats.add(team[1]);
        teamsJson.add(seats);
      }
      out.add("teams", teamsJson);
    }
    RoundState state = call(rounds, args).startRound(start.build()).getState();

    // A move out of turn, as a player's client out of step might send it: the rules refuse
    // it by reason, and the table goes on with the state it holds.
    JsonArray refused = new JsonArray();
    int seat = (state.getView().getTurn() + 1) % 4;
    RoundAction early = RoundAction.newBuilder().setSeat(seat).setType(ActionType.ACTION_TYPE_PLAY)
        .setCards(Cards.newBuilder().addCards(state.getView().getHands(seat).getCards(0))).build();
    try {
      apply(call(rounds, args), ruleSet, state, early);
      throw new IllegalStateException("the service accepted a play out of turn");
    } catch (Refused r) {
      if (!r.reason.equals("NOT_YOUR_TURN")) {
        throw r;
      }
      JsonObject entry = new JsonObject();
      entry.addProperty("seat", seat);
      entry.add("cards", texts(early.getCards().getCardsValueList()));
      entry.addProperty("reason", r.reason);
      entry.addProperty("message", r.getMessage());
      refused.add(entry);
    }

    JsonArray actions = new JsonArray();
    RoundResult result = null;
    while (!state.getView().getOver()) {
      if (actions.size() >= MAX_ACTIONS) {
        throw new IllegalStateException("no end after " + MAX_ACTIONS + " actions");
      }
      SuggestActionResponse hint = call(rounds, args).suggestAction(SuggestActionRequest
          .newBuilder().setRuleSet(ruleSet).setState(state.getData()).build());
      ApplyActionResponse done = apply(call(rounds, args), ruleSet, state, hint.getAction());
      RoundAction a = hint.getAction();
      JsonObject action = new JsonObject();
      action.addProperty("seat", a.getSeat());
      action.addProperty("type", a.getType().name());
      action.addProperty("reason", hint.getReason());
      if (a.getType() == ActionType.ACTION_TYPE_PLAY) {
        action.add("cards", texts(a.getCards().getCardsValueList()));
        if (a.hasDeclaration()) {
          action.add("declaration", json(a.getDeclaration()));
        }
      }
      actions.add(action);
      state = done.getState();
      result = done.getResult();
    }
    out.add("actions", actions);
    out.add("refused", refused);
    JsonArray handAt = new JsonArray();
    state.getView().getHandAtList().forEach(handAt::add);
    out.add("handAt", handAt);
    out.add("result", json(result));
    return out;
  }

  static RoundServiceBlockingStub call(RoundServiceBlockingStub stub, Args args) {
    return stub.withDeadlineAfter(args.deadlineMs(), TimeUnit.MILLISECONDS);
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
    ManagedChannel channel = ManagedChannelBuilder.forTarget(args.address()).usePlaintext().build();
    int status = 0;
    try {
      JsonObject table = playRound(channel, args);
      System.out.println(new GsonBuilder().setPrettyPrinting().disableHtmlEscaping().create()
          .toJson(table));
      JsonObject result = table.getAsJsonObject("result");
      List<String> finals = new ArrayList<>();
      result.getAsJsonArray("seats").forEach(
          s -> finals.add(s.getAsJsonObject().get("final").getAsString()));
      System.err.printf("%s: %d actions, %s, finals %s%n", args.variant(),
          table.getAsJsonArray("actions").size(), result.get("kind").getAsString(),
          String.join(" ", finals));
    } catch (StatusRuntimeException e) {
      System.err.println(e.getStatus().getCode() + ": " + e.getStatus().getDescription()
          + (reason(e).isEmpty() ? "" : " (" + reason(e) + ")"));
      status = 1;
    } catch (Refused e) {
      System.err.println("refused (" + e.reason + "): " + e.getMessage());
      status = 1;
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    System.exit(status);
  }
}

// Command table plays a whole round through the RoundService (shuangkou.v1.RoundService)
// with four 托管 seats: deal, then for each turn SuggestAction -> ApplyAction with the state
// the last response returned, until the round is over. It prints one JSON document on
// stdout: the deal, every action as a replay action, the move the rules refused, and the
// settlement (RoundResult, in the proto3 JSON mapping: 64-bit integers as strings).
//
//	run.sh table [ADDRESS] [--variant ID] [--seed N] [--stake N] [--deadline-ms MS]
//
// ADDRESS (or --address, or $SHUANGKOU_ADDR; default localhost:50051). The deal is a seeded
// shuffle of the variant's deck (built-in variants; the same generator as the Node.js
// table.mjs, so a seed deals the same round in every language), the leader is seat seed % 4
// and reveals its first card (three decks: the teams are stated instead). Before the first
// turn the seat after the one to act tries to play, as a client out of step would: the
// service refuses it (FAILED_PRECONDITION, ErrorInfo reason NOT_YOUR_TURN) and the table
// goes on with the state it holds. The table keeps only the state bytes between calls, as
// a game server would: any replica can answer any call.
// Exit status: 0 when the round was played out, 1 when a call failed, 2 on bad arguments.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "example.com/shuangkou/gen/shuangkou/v1"
)

const usage = "usage: run.sh table [ADDRESS] [--variant ID] [--seed N] [--stake N] [--deadline-ms MS]"

const maxActions = 2000 // a round of 108 cards ends far sooner: a loop guard

// The decks of the built-in variants (RULES.md §3): copies of each suited card and the
// lowest natural rank position (3 = 0, 7 = 4); every deck has two of each joker.
var decks = map[string][2]int{
	"baibian": {2, 0}, "fengkuang": {2, 0}, "bianfeng": {2, 0}, "bianfeng_lishui": {2, 0},
	"qianbian": {2, 0}, "huopin": {2, 0}, "fengkuang_crazy": {3, 4},
}

const (
	jokerCopies = 2
	smallJoker  = 70
	bigJoker    = 75
)

// Rule errors (docs/rounds.md "Errors a game server must handle"): the player's move is
// refused and the state the table holds is still the current one. Any other failure
// (ROUND_OVER, malformed input, transport) is not the player's and ends the run.
var refusedMoves = map[string]bool{
	"NOT_YOUR_TURN": true, "CARDS_NOT_HELD": true, "DOES_NOT_BEAT": true,
	"LEADER_MUST_PLAY": true, "NO_SUCH_READING": true, "SEAT_FINISHED": true,
	"ESCAPE_NOT_ALLOWED": true,
}

var jsonOptions = protojson.MarshalOptions{EmitUnpopulated: true}

type args struct {
	address, variant string
	seed             uint32
	stake            int64
	deadline         time.Duration
}

// refused is a move the rules refused: the google.rpc.ErrorInfo reason and the message.
type refused struct {
	Seat    uint32   `json:"seat"`
	Cards   []string `json:"cards"`
	Reason  string   `json:"reason"`
	Message string   `json:"message"`
}

func (r *refused) Error() string { return fmt.Sprintf("refused (%s): %s", r.Reason, r.Message) }

type action struct {
	Seat        uint32          `json:"seat"`
	Type        string          `json:"type"`
	Reason      string          `json:"reason"`
	Cards       []string        `json:"cards,omitempty"`
	Declaration json.RawMessage `json:"declaration,omitempty"`
}

type table struct {
	Address  string          `json:"address"`
	Variant  string          `json:"variant"`
	Seed     uint32          `json:"seed"`
	Stake    int64           `json:"stake"`
	Hands    [][]string      `json:"hands"`
	Leader   uint32          `json:"leader"`
	Revealed string          `json:"revealed,omitempty"`
	Teams    [][]uint32      `json:"teams,omitempty"`
	Actions  []action        `json:"actions"`
	Refused  []*refused      `json:"refused"`
	HandAt   []uint32        `json:"handAt"`
	Result   json.RawMessage `json:"result"`
}

func parseArgs(argv []string) (*args, error) {
	fs := flag.NewFlagSet("table", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder)) // errors are reported with the usage below
	a := &args{}
	var seed, stake, deadlineMs uint64
	address := ""
	if len(argv) > 0 && !strings.HasPrefix(argv[0], "-") {
		address, argv = argv[0], argv[1:]
	}
	fs.StringVar(&address, "address", address, "gRPC target")
	fs.StringVar(&a.variant, "variant", "baibian", "built-in rule set id")
	fs.Uint64Var(&seed, "seed", 1, "seed of the deal")
	fs.Uint64Var(&stake, "stake", 1, "the settlement's stake")
	fs.Uint64Var(&deadlineMs, "deadline-ms", 5000, "deadline of each call")
	if err := fs.Parse(argv); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if _, ok := decks[a.variant]; !ok {
		return nil, fmt.Errorf("--variant must be one of baibian, fengkuang, fengkuang_crazy, " +
			"bianfeng, bianfeng_lishui, qianbian, huopin")
	}
	if seed > math.MaxUint32 || stake > math.MaxUint32 || deadlineMs > math.MaxUint32 {
		return nil, errors.New("--seed, --stake and --deadline-ms must be below 2**32")
	}
	if address == "" {
		address = os.Getenv("SHUANGKOU_ADDR")
	}
	if address == "" {
		address = "localhost:50051"
	}
	a.address, a.seed = address, uint32(seed)
	a.stake = int64(stake)
	if a.stake < 1 {
		a.stake = 1
	}
	if deadlineMs < 1 {
		deadlineMs = 1
	}
	a.deadline = time.Duration(deadlineMs) * time.Millisecond
	return a, nil
}

// mulberry32 is a small seeded generator: the same numbers as table.mjs for a seed.
type mulberry32 uint32

func (m *mulberry32) next() float64 {
	*m += 0x6d2b79f5
	t := uint32(*m)
	t = (t ^ t>>15) * (t | 1)
	t ^= t + (t^t>>7)*(t|61)
	return float64(t^t>>14) / 4294967296
}

// deal returns the four hands, sorted, of a seeded shuffle. Card codes (docs/design.md
// "Card codes"): 1 + rank * 5 + suit; jokers SJ = 70, BJ = 75.
func deal(variant string, seed uint32) [4][]pb.Card {
	copies, lowest := decks[variant][0], decks[variant][1]
	var deck []pb.Card
	for rank := lowest; rank < 13; rank++ {
		for suit := 0; suit < 4; suit++ {
			for d := 0; d < copies; d++ {
				deck = append(deck, pb.Card(1+rank*5+suit))
			}
		}
	}
	for j := 0; j < jokerCopies; j++ {
		deck = append(deck, smallJoker, bigJoker)
	}
	random := mulberry32(seed)
	for i := len(deck) - 1; i > 0; i-- {
		k := int(math.Floor(random.next() * float64(i+1)))
		deck[i], deck[k] = deck[k], deck[i]
	}
	var hands [4][]pb.Card
	size := len(deck) / 4
	for s := range hands {
		hands[s] = append([]pb.Card(nil), deck[s*size:(s+1)*size]...)
		sort.Slice(hands[s], func(i, j int) bool { return hands[s][i] < hands[s][j] })
	}
	return hands
}

func cardTexts(cards []pb.Card) []string {
	texts := make([]string, len(cards))
	for i, c := range cards {
		texts[i] = strings.TrimPrefix(c.String(), "CARD_")
	}
	return texts
}

// reason is the google.rpc.ErrorInfo reason of a failed call ("" when it carries none).
func reason(err error) string {
	for _, detail := range status.Convert(err).Details() {
		if info, ok := detail.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}

type round struct {
	client  pb.RoundServiceClient
	ruleSet *pb.RuleSet
	timeout time.Duration
}

func (r *round) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), r.timeout) // every call has a deadline
}

// apply is ApplyAction, with a refused move told apart by its ErrorInfo reason.
func (r *round) apply(state *pb.RoundState, a *pb.RoundAction) (*pb.ApplyActionResponse, error) {
	ctx, cancel := r.ctx()
	defer cancel()
	done, err := r.client.ApplyAction(ctx, &pb.ApplyActionRequest{
		RuleSet: r.ruleSet, State: state.Data, Action: a})
	if err != nil && refusedMoves[reason(err)] {
		return nil, &refused{Seat: a.Seat, Cards: cardTexts(a.GetCards().GetCards()),
			Reason: reason(err), Message: status.Convert(err).Message()}
	}
	return done, err
}

func (r *round) suggest(state *pb.RoundState) (*pb.SuggestActionResponse, error) {
	ctx, cancel := r.ctx()
	defer cancel()
	return r.client.SuggestAction(ctx, &pb.SuggestActionRequest{RuleSet: r.ruleSet, State: state.Data})
}

func playRound(conn *grpc.ClientConn, a *args) (*table, *pb.RoundResult, error) {
	r := &round{pb.NewRoundServiceClient(conn), &pb.RuleSet{Source: &pb.RuleSet_Id{Id: a.variant}},
		a.deadline}
	hands := deal(a.variant, a.seed)
	leader := a.seed % 4
	out := &table{Address: a.address, Variant: a.variant, Seed: a.seed, Stake: a.stake,
		Leader: leader, Actions: []action{}, Refused: []*refused{}}
	start := &pb.StartRoundRequest{RuleSet: r.ruleSet, Leader: leader, Stake: proto.Int64(a.stake)}
	for _, hand := range hands {
		start.Hands = append(start.Hands, &pb.Cards{Cards: hand})
		out.Hands = append(out.Hands, cardTexts(hand))
	}
	if decks[a.variant][0] == 2 {
		start.Revealed = hands[leader][0]
		out.Revealed = cardTexts(hands[leader][:1])[0]
	} else {
		out.Teams = [][]uint32{{leader, (leader + 2) % 4}, {(leader + 1) % 4, (leader + 3) % 4}}
		for _, team := range out.Teams {
			start.Teams = append(start.Teams, &pb.Team{Seats: team})
		}
	}
	ctx, cancel := r.ctx()
	started, err := r.client.StartRound(ctx, start)
	cancel()
	if err != nil {
		return nil, nil, err
	}
	state := started.State

	// A move out of turn, as a player's client out of step might send it: the rules refuse
	// it by reason, and the table goes on with the state it holds.
	seat := (state.View.GetTurn() + 1) % 4
	early := &pb.RoundAction{Seat: seat, Type: pb.ActionType_ACTION_TYPE_PLAY,
		Cards: &pb.Cards{Cards: state.View.Hands[seat].Cards[:1]}}
	var no *refused
	switch _, err := r.apply(state, early); {
	case errors.As(err, &no) && no.Reason == "NOT_YOUR_TURN":
		out.Refused = append(out.Refused, no)
	case err != nil:
		return nil, nil, err
	default:
		return nil, nil, errors.New("the service accepted a play out of turn")
	}

	var result *pb.RoundResult
	for !state.View.Over {
		if len(out.Actions) >= maxActions {
			return nil, nil, fmt.Errorf("no end after %d actions", maxActions)
		}
		hint, err := r.suggest(state)
		if err != nil {
			return nil, nil, err
		}
		done, err := r.apply(state, hint.Action)
		if err != nil {
			return nil, nil, err
		}
		h := hint.Action
		act := action{Seat: h.Seat, Type: h.Type.String(), Reason: hint.Reason}
		if h.Type == pb.ActionType_ACTION_TYPE_PLAY {
			act.Cards = cardTexts(h.Cards.GetCards())
			if h.Declaration != nil {
				act.Declaration, _ = jsonOptions.Marshal(h.Declaration)
			}
		}
		out.Actions = append(out.Actions, act)
		state, result = done.State, done.Result
	}
	out.HandAt = state.View.HandAt
	out.Result, err = jsonOptions.Marshal(result)
	return out, result, err
}

func main() {
	a, err := parseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "%v\n%s\n", err, usage)
		os.Exit(2)
	}
	// grpc-go 1.34 and later spell the plaintext option
	// grpc.WithTransportCredentials(insecure.NewCredentials()).
	conn, err := grpc.Dial(a.address, grpc.WithInsecure())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	t, result, err := playRound(conn, a)
	conn.Close()
	if err != nil {
		if st, ok := status.FromError(err); ok && reason(err) != "" {
			err = fmt.Errorf("%s: %s (%s)", st.Code(), st.Message(), reason(err))
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetEscapeHTML(false)
	encoder.SetIndent("", "  ")
	if err := encoder.Encode(t); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	finals := make([]string, len(result.Seats))
	for i, s := range result.Seats {
		finals[i] = fmt.Sprint(s.Final)
	}
	fmt.Fprintf(os.Stderr, "%s: %d actions, %s, finals %s\n", t.Variant, len(t.Actions),
		result.Kind, strings.Join(finals, " "))
}

// Command client is an example Go client of the Shuangkou gRPC service
// (shuangkou.v1.ShuangkouService).
//
// It classifies a play, compares it with the play standing on the table, enumerates the
// legal plays of a hand page by page and scores a round, and prints the four exchanges as
// one JSON document on stdout: for each step the request and the response (or the error),
// in the proto3 JSON mapping (camelCase names, enums by name, 64-bit integers as strings).
//
//	run.sh client [ADDRESS] [--variant ID] [--play CARDS] [--current CARDS] [--hand CARDS]
//	              [--to-beat CARDS] [--page-size N] [--pages N] [--summary JSON]
//	              [--deadline-ms MS]
//
// ADDRESS (or --address, or $SHUANGKOU_ADDR; default localhost:50051) is any gRPC target:
// "host:port", or "dns:///shuangkou-headless:50051" to balance calls over every pod
// (round_robin, docs/operations.md). Exit status: 0 when every call succeeded, 1 when one
// failed (its step then holds "error": code, message and the ErrorInfo reason), 2 on bad
// arguments.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "example.com/shuangkou/gen/shuangkou/v1"
)

// Seats 0 and 2 finish first and second (双扣) and seat 0 played a seven-card bomb:
// RULES.md §10 gives baibian finals 44, -36, 28, -36.
const defaultSummary = `{"finishOrder": [0, 2], "bombs": [{"seat": 0, "cards": {"cardsText": "7777777"}}]}`

const usage = `usage: run.sh client [ADDRESS] [--variant ID] [--play CARDS] [--current CARDS]
                     [--hand CARDS] [--to-beat CARDS] [--page-size N] [--pages N]
                     [--summary JSON] [--deadline-ms MS]`

// The proto3 JSON mapping, unset fields included, so that seat 0 and rank position 0 show.
var jsonOptions = protojson.MarshalOptions{EmitUnpopulated: true}

type args struct {
	address, variant, play, current, hand, toBeat string
	pageSize, pages                               int
	summary                                       *pb.RoundSummary
	deadline                                      time.Duration
}

type callError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Reason  string `json:"reason,omitempty"`
	Field   string `json:"field,omitempty"`
}

// One step of the output: the request, and the response or the error.
type step struct {
	Request   json.RawMessage `json:"request"`
	PagesRead int             `json:"pagesRead,omitempty"`
	Response  json.RawMessage `json:"response,omitempty"`
	Error     *callError      `json:"error,omitempty"`
}

type output struct {
	Address   string `json:"address"`
	Variant   string `json:"variant"`
	Classify  *step  `json:"classify"`
	Compare   *step  `json:"compare"`
	Enumerate *step  `json:"enumerate"`
	Score     *step  `json:"score"`
}

func parseArgs(argv []string) (*args, error) {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder)) // errors are reported with the usage below
	a := &args{}
	var summary string
	var deadlineMs int
	address := ""
	if len(argv) > 0 && !strings.HasPrefix(argv[0], "-") {
		address, argv = argv[0], argv[1:]
	}
	fs.StringVar(&address, "address", address, "gRPC target")
	fs.StringVar(&a.variant, "variant", "baibian", "built-in rule set id")
	fs.StringVar(&a.play, "play", "7777 BJ", "cards to classify, and to compare with --current")
	fs.StringVar(&a.current, "current", "8888", "the play standing on the table")
	fs.StringVar(&a.hand, "hand", "3 4 5 6 7 7 7 7 8 9 BJ", "the hand to enumerate")
	fs.StringVar(&a.toBeat, "to-beat", "", "the play the hand must beat (empty: it leads)")
	fs.IntVar(&a.pageSize, "page-size", 20, "plays per page (0: the server's cap)")
	fs.IntVar(&a.pages, "pages", 1, "most pages to read")
	fs.StringVar(&summary, "summary", defaultSummary, "a RoundSummary as JSON")
	fs.IntVar(&deadlineMs, "deadline-ms", 5000, "deadline of each call")
	if err := fs.Parse(argv); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	switch {
	case a.pageSize < 0:
		return nil, fmt.Errorf("--page-size must be an integer >= 0, got %d", a.pageSize)
	case a.pages < 1:
		return nil, fmt.Errorf("--pages must be an integer >= 1, got %d", a.pages)
	case deadlineMs < 1:
		return nil, fmt.Errorf("--deadline-ms must be a positive integer, got %d", deadlineMs)
	}
	a.summary = &pb.RoundSummary{}
	if err := protojson.Unmarshal([]byte(summary), a.summary); err != nil {
		return nil, fmt.Errorf("--summary is not a RoundSummary: %v", err)
	}
	if address == "" {
		address = os.Getenv("SHUANGKOU_ADDR")
	}
	if address == "" {
		address = "localhost:50051"
	}
	a.address, a.deadline = address, time.Duration(deadlineMs)*time.Millisecond
	return a, nil
}

func toJSON(m proto.Message) json.RawMessage {
	b, err := jsonOptions.Marshal(m)
	if err != nil {
		panic(err) // only for an Any of an unknown type: none here
	}
	return b
}

// errorOf is a failed call as JSON: the status code and message, and the reason and field
// the google.rpc.Status details carry (ErrorInfo, BadRequest).
func errorOf(err error) *callError {
	st := status.Convert(err)
	e := &callError{Code: code.Code_name[int32(st.Code())], Message: st.Message()}
	for _, detail := range st.Details() {
		switch d := detail.(type) {
		case *errdetails.ErrorInfo:
			e.Reason = d.GetReason()
		case *errdetails.BadRequest:
			for _, v := range d.GetFieldViolations() {
				e.Field = v.GetField()
			}
		}
	}
	return e
}

// call runs one RPC with the deadline every call carries; the server honours it.
func call[Req, Resp proto.Message](a *args, request Req,
	rpc func(context.Context, Req, ...grpc.CallOption) (Resp, error)) *step {
	ctx, cancel := context.WithTimeout(context.Background(), a.deadline)
	defer cancel()
	s := &step{Request: toJSON(request)}
	response, err := rpc(ctx, request)
	if err != nil {
		s.Error = errorOf(err)
	} else {
		s.Response = toJSON(response)
	}
	return s
}

// enumerate reads up to a.pages pages of legal plays (AIP-158): the same request again with
// each next_page_token, which is tied to the other request fields; any replica continues
// it. The response is the first page with the plays of every page read and the last token.
func enumerate(a *args, client pb.ShuangkouServiceClient, request *pb.EnumerateLegalPlaysRequest) *step {
	s := &step{Request: toJSON(request)}
	var all *pb.EnumerateLegalPlaysResponse
	next := proto.Clone(request).(*pb.EnumerateLegalPlaysRequest)
	for s.PagesRead < a.pages && (all == nil || all.NextPageToken != "") {
		ctx, cancel := context.WithTimeout(context.Background(), a.deadline)
		page, err := client.EnumerateLegalPlays(ctx, next)
		cancel()
		if err != nil {
			s.Error = errorOf(err)
			s.PagesRead = 0
			return s
		}
		if all == nil {
			all = page
		} else {
			all.Plays = append(all.Plays, page.Plays...)
			all.NextPageToken = page.NextPageToken
		}
		next.PageToken = page.NextPageToken
		s.PagesRead++
	}
	s.Response = toJSON(all)
	return s
}

func cards(text string) *pb.Cards { return &pb.Cards{CardsText: text} }

func main() {
	a, err := parseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "%v\n%s\n", err, usage)
		os.Exit(2)
	}
	// One connection for every call; round_robin spreads calls over every address the name
	// resolves to (a headless Service) instead of pinning one pod. grpc-go 1.34 and later
	// spell the plaintext option grpc.WithTransportCredentials(insecure.NewCredentials()).
	conn, err := grpc.Dial(a.address, grpc.WithInsecure(),
		grpc.WithDefaultServiceConfig(`{"loadBalancingConfig": [{"round_robin": {}}]}`))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer conn.Close()
	client := pb.NewShuangkouServiceClient(conn)
	ruleSet := &pb.RuleSet{Source: &pb.RuleSet_Id{Id: a.variant}}

	out := output{Address: a.address, Variant: a.variant}
	out.Classify = call(a, &pb.ClassifyPlayRequest{RuleSet: ruleSet, Play: cards(a.play)},
		client.ClassifyPlay)
	out.Compare = call(a, &pb.ComparePlaysRequest{
		RuleSet: ruleSet, Current: cards(a.current), Play: cards(a.play)}, client.ComparePlays)
	out.Enumerate = enumerate(a, client, &pb.EnumerateLegalPlaysRequest{
		RuleSet: ruleSet, Hand: cards(a.hand), ToBeat: cards(a.toBeat),
		PageSize: int32(a.pageSize), IncludeCounts: true, IncludeBestBomb: true})
	out.Score = call(a, &pb.ScoreRoundRequest{
		RuleSet: ruleSet, Round: &pb.ScoreRoundRequest_Summary{Summary: a.summary}}, client.ScoreRound)

	encoder := json.NewEncoder(os.Stdout)
	encoder.SetEscapeHTML(false)
	encoder.SetIndent("", "  ")
	if err := encoder.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, s := range []*step{out.Classify, out.Compare, out.Enumerate, out.Score} {
		if s.Error != nil {
			conn.Close()
			os.Exit(1)
		}
	}
}

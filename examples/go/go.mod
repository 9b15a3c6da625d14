module example.com/shuangkou

go 1.19

// The versions Debian 12 packages (golang-google-grpc-dev, golang-google-protobuf-dev,
// golang-google-genproto-dev, ...): run.sh vendors them from /usr/share/gocode/src and
// checks that the installed packages are these versions. Outside Debian, `go mod tidy`
// fetches them (or raise them: the examples use no API newer than these).
require (
	google.golang.org/genproto v0.0.0-20200413115906-b5235f65be36
	google.golang.org/grpc v1.33.3
	google.golang.org/protobuf v1.28.1
)

require (
	github.com/golang/protobuf v1.5.2 // indirect
	golang.org/x/net v0.7.0 // indirect
	golang.org/x/sys v0.3.0 // indirect
	golang.org/x/text v0.7.0 // indirect
)

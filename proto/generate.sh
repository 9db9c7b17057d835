#!/bin/sh
# Regenerates federation.pb.go and federation_grpc.pb.go from federation.proto.
# Needs protoc (Debian: protobuf-compiler) and, on PATH:
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
#   go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
# The generated files are committed, so building fedirl never needs protoc.
set -eu
cd "$(dirname "$0")"
PATH="$PATH:$(go env GOPATH)/bin"
protoc --go_out=. --go_opt=paths=source_relative \
       --go-grpc_out=. --go-grpc_opt=paths=source_relative \
       federation.proto

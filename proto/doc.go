// Package fedirlpb holds the protobuf messages and gRPC service of the fedirl
// federation protocol, generated from federation.proto by generate.sh. It has
// no logic of its own; pkg/federation adapts it to the transport-independent
// coordinator and client.
package fedirlpb

//go:generate ./generate.sh

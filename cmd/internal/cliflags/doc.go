// Package cliflags holds the flags that more than one command of this
// repository takes, so that they are spelled, parsed and checked in one
// place: the client's TLS and token flags, the object-store URL flags, and
// the check of a HOST:PORT list. `metad` (cmd/metad) and the benchmark
// driver `metad-bench` (cmd/metad-bench) both use it; a flag that means
// the same thing in both must behave the same in both.
//
// It is an adapter of the command line, nothing more: it binds pflag
// flags to the client's and the object store's own Config types and
// leaves validation of those to their Validate. Mistakes in the flags are
// returned wrapped in ErrUsage, which each command maps to its "bad usage"
// exit status (2).
package cliflags

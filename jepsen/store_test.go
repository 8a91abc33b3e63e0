package main

import (
	"strings"
	"testing"

	"github.com/metad/metad/jepsen/cluster"
	"github.com/metad/metad/jepsen/nemesis"
)

// The store nemeses parse with their shapes, and one that stops the store
// is refused, naming the flag, unless the store is S3.
func TestStoreFlags(t *testing.T) {
	kinds, err := nemesis.ParseKinds("store-unavailable:kill,flapping:reported")
	if err != nil || len(kinds) != 2 {
		t.Fatalf("store kinds: %v %v", kinds, err)
	}
	if _, err := nemesis.ParseKinds("flapping:gone"); err == nil {
		t.Fatal("unknown flapping shape accepted")
	}
	local := options{store: cluster.StoreLocal}
	if err := checkStoreFlags(local, kinds); err == nil || !strings.Contains(err.Error(), "--store s3") {
		t.Fatalf("store-unavailable with the local store: %v", err)
	}
	if err := checkStoreFlags(local, []string{"flapping"}); err != nil {
		t.Fatalf("flapping with the local store refused: %v", err)
	}
	corrupt, err := nemesis.ParseKinds("corrupt:several,corrupt")
	if err != nil || len(corrupt) != 2 {
		t.Fatalf("corrupt kinds: %v %v", corrupt, err)
	}
	if err := checkStoreFlags(local, corrupt); err != nil {
		t.Fatalf("corrupt with the local store refused: %v", err)
	}
	if err := checkStoreFlags(options{store: cluster.StoreS3}, kinds); err != nil {
		t.Fatalf("store-unavailable with S3 refused: %v", err)
	}
	if err := checkStoreFlags(options{store: "gcs"}, nil); err == nil || !strings.Contains(err.Error(), "--store") {
		t.Fatalf("unknown store: %v", err)
	}
	if err := checkStoreFlags(options{store: cluster.StoreLocal, falseReps: -1}, nil); err == nil || !strings.Contains(err.Error(), "--false-reports") {
		t.Fatalf("negative false reporters: %v", err)
	}
}

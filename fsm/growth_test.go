package fsm

import (
	"testing"

	"github.com/metad/metad/fsm/fsmpb"
)

func TestGrowsNamesTheDataCommands(t *testing.T) {
	grows := map[string]bool{
		"create_stream": true, "commit_append": true, "commit_object": true,
		"publish_generation": true, "register_object": true,
	}
	// Every operation of the Command oneof, with the one it carries set.
	ops := (&fsmpb.Command{}).ProtoReflect().Descriptor().Oneofs().ByName("op").Fields()
	for i := range ops.Len() {
		f := ops.Get(i)
		cmd := &fsmpb.Command{}
		cmd.ProtoReflect().Set(f, cmd.ProtoReflect().NewField(f))
		if got := Grows(cmd); got != grows[string(f.Name())] {
			t.Errorf("Grows(%s) = %v", f.Name(), got)
		}
	}
	if Grows(&fsmpb.Command{}) {
		t.Error("an empty command grows")
	}
}

//go:build !metad_faults

package raftstore

import "github.com/metad/metad/fsm/fsmpb"

// plantedEncode is the seam of the planted bugs that rewrite a command
// before it is proposed (faults_on.go): in the production build, none.
func plantedEncode(_ *fsmpb.Command, encode func(stamp int64) ([]byte, error)) func(stamp int64) ([]byte, error) {
	return encode
}

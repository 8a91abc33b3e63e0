package client_test

import (
	"errors"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/metad/metad/client"
)

// A failure classified by the server arrives as a status with a
// google.rpc.ErrorInfo reason; the client turns it back into sentinels,
// so callers branch with errors.Is and never parse messages.
func Example_errors() {
	st, _ := status.New(codes.NotFound, "stream 999 does not exist").WithDetails(
		&errdetails.ErrorInfo{Reason: "STREAM_NOT_FOUND", Domain: "metad.dev", Metadata: map[string]string{"definite": "true"}})
	err := client.FromStatus(st.Err()) // Call and the Client's methods do this for you

	fmt.Println(client.Reason(err))
	fmt.Println(errors.Is(err, client.ErrStreamNotFound), errors.Is(err, client.ErrNotFound))
	fmt.Println(errors.Is(err, client.ErrRetryable), errors.Is(err, client.ErrIndeterminate))
	// Output:
	// STREAM_NOT_FOUND
	// true true
	// false false
}

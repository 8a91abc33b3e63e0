package reasons

import (
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"

	"github.com/metad/metad/api/metadpb"
)

// FromError returns the reason a status error carries in its ErrorInfo:
// REASON_UNSPECIFIED for nil, an error that is no status, or a status
// without a reason this build knows. The server's forwarding (package
// peer) and audit trail (package api) read reasons this way.
func FromError(err error) metadpb.Reason {
	if err == nil {
		return metadpb.Reason_REASON_UNSPECIFIED
	}
	st, ok := status.FromError(err)
	if !ok {
		return metadpb.Reason_REASON_UNSPECIFIED
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return metadpb.Reason(metadpb.Reason_value[info.Reason])
		}
	}
	return metadpb.Reason_REASON_UNSPECIFIED
}

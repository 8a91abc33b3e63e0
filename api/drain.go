package api

// Drain marks this server NOT_SERVING for good, in gRPC health and so in
// /readyz, the first step of a graceful shutdown: load balancers and
// Kubernetes stop sending it calls while the calls in flight finish. Later
// health evaluations do not change the verdict back. Watches and long
// polls end at once, resumably (SHUTTING_DOWN): they would otherwise hold
// the graceful stop until its timeout.
func (s *Server) Drain() {
	s.health.Shutdown()
	s.endWatches()
}

package api

// Drain marks this server NOT_SERVING for good, in gRPC health and so in
// /readyz, the first step of a graceful shutdown: load balancers and
// Kubernetes stop sending it calls while the calls in flight finish. Later
// health evaluations do not change the verdict back.
func (s *Server) Drain() {
	s.health.Shutdown()
}

package console

// opsMessages are the messages of this page family (being built).
func opsMessages() map[string]pair { return map[string]pair{} }

// opsRoutes are the pages of this family (being built).
func (s *Server) opsRoutes() []route { return nil }

package console

// instanceMessages are the messages of this page family (being built).
func instanceMessages() map[string]pair { return map[string]pair{} }

// instanceRoutes are the pages of this family (being built).
func (s *Server) instanceRoutes() []route { return nil }

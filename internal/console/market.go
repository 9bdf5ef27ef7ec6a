package console

// marketMessages are the messages of this page family (being built).
func marketMessages() map[string]pair { return map[string]pair{} }

// marketRoutes are the pages of this family (being built).
func (s *Server) marketRoutes() []route { return nil }

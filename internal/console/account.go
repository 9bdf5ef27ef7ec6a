package console

// accountMessages are the messages of this page family (being built).
func accountMessages() map[string]pair { return map[string]pair{} }

// accountRoutes are the pages of this family (being built).
func (s *Server) accountRoutes() []route { return nil }

package console

// messageGroups are the console's messages, one group per page family.
// Each group is a map of key to Chinese and English; newCatalog refuses a
// key defined twice or a message without both languages.
func messageGroups() []map[string]pair {
	return []map[string]pair{coreMessages(), authMessages(), accountMessages(), marketMessages(),
		instanceMessages(), opsMessages()}
}

// routes are the console's pages and form actions, one group per family.
func (s *Server) routes() []route {
	var out []route
	for _, g := range [][]route{s.authRoutes(), s.accountRoutes(), s.marketRoutes(), s.instanceRoutes(), s.opsRoutes()} {
		out = append(out, g...)
	}
	return out
}

// coreMessages are the layout's and the error pages' messages.
func coreMessages() map[string]pair {
	return map[string]pair{
		"brand":               {"gpurent 算力租赁", "gpurent GPU cloud"},
		"lang.switch":         {"English", "中文"},
		"nav.dashboard":       {"控制台", "Dashboard"},
		"nav.market":          {"GPU 市场", "GPU market"},
		"nav.rent":            {"租用", "Rent"},
		"nav.billing":         {"费用", "Billing"},
		"nav.account":         {"账户", "Account"},
		"nav.transparency":    {"算力透明", "Transparency"},
		"nav.sla":             {"服务协议", "SLA"},
		"nav.calculator":      {"租还是买", "Rent or buy"},
		"nav.ops":             {"运营", "Operations"},
		"nav.login":           {"登录", "Sign in"},
		"nav.signup":          {"注册", "Sign up"},
		"nav.logout":          {"退出", "Sign out"},
		"footer.note":         {"价格以人民币计，时间为北京时间。", "Prices in CNY; times in Beijing time."},
		"err.not_found":       {"页面不存在", "Page not found"},
		"err.login_first":     {"请先登录", "Please sign in first"},
		"err.bad_form":        {"表单无法读取", "The form could not be read"},
		"err.csrf":            {"页面已过期，请刷新后重试", "This page has expired: reload it and try again"},
		"err.invalid":         {"输入有误：", "Please check your input:"},
		"err.conflict":        {"操作与当前状态冲突：", "That conflicts with the current state:"},
		"err.payment":         {"余额不足：", "Not enough balance:"},
		"err.unavailable":     {"服务暂不可用：", "Not available right now:"},
		"err.internal":        {"服务器出错，请稍后再试", "Something went wrong on our side; try again later"},
		"err.too_many":        {"尝试次数过多，请 %d 分钟后再试", "Too many attempts: try again in %d minutes"},
		"err.back":            {"返回首页", "Back to the start"},
		"common.save":         {"保存", "Save"},
		"common.cancel":       {"取消", "Cancel"},
		"common.confirm":      {"确定吗？", "Are you sure?"},
		"common.copy":         {"复制", "Copy"},
		"common.copied":       {"已复制", "Copied"},
		"common.none":         {"暂无", "None yet"},
		"common.yes":          {"是", "Yes"},
		"common.no":           {"否", "No"},
		"common.required":     {"%s 为必填项", "%s is required"},
		"common.too_long":     {"%s 最多 %d 个字符", "%s must be at most %d characters"},
		"common.not_number":   {"%s 必须是数字", "%s must be a number"},
		"common.out_of_range": {"%s 必须在 %d 到 %d 之间", "%s must be from %d to %d"},
	}
}

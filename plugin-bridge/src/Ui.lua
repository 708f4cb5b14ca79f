-- Ui.lua: the toolbar button and the dock widget.
--
-- The widget shows the connection state and what to do about a failure, the daemon URL and an
-- optional token (both editable and saved by Main through plugin:SetSetting), an auto-connect
-- toggle, and one Connect/Disconnect button. The toolbar button shows and hides the widget, and
-- stays pressed exactly while the widget is open (also when it is closed with its X). Text and
-- fields take Studio's theme colours (settings().Studio.Theme) and follow a theme change.

local Ui = {}
Ui.__index = Ui

Ui.WIDGET_ID = "RunboxBridgeWidget"

-- The state names the bridge reports, as the widget shows them.
Ui.STATE_TEXT = {
	disconnected = "Not connected",
	connecting = "Connecting...",
	connected = "Connected",
	retrying = "Daemon not reachable, retrying",
	blocked = "Needs your attention",
}

local STATE_COLOR = {
	connected = { 0.2, 0.7, 0.3 },
	connecting = { 0.9, 0.7, 0.2 },
	retrying = { 0.9, 0.6, 0.1 },
	blocked = { 0.85, 0.25, 0.2 },
	disconnected = { 0.55, 0.55, 0.55 },
}

-- Studio's colour for a style guide item (Enum.StudioStyleGuideColor), or fallback when there
-- is no theme to ask (env.studioSettings absent, a failing call, an unknown item).
local function themeColor(env, item, fallback)
	local ok, c = pcall(function()
		return env.studioSettings().Theme:GetColor(env.Enum.StudioStyleGuideColor[item])
	end)
	if ok and c ~= nil then
		return c
	end
	return fallback
end

-- env: Instance, Color3, UDim, UDim2, Enum, DockWidgetPluginGuiInfo (Studio's globals, or fakes),
-- studioSettings (optional: returns settings().Studio).
local function make(env, className, props, parent)
	local inst = env.Instance.new(className)
	for key, value in pairs(props) do
		inst[key] = value
	end
	if parent ~= nil then
		inst.Parent = parent
	end
	return inst
end

local function label(env, parent, order, text)
	return make(env, "TextLabel", {
		Name = "Label" .. order,
		LayoutOrder = order,
		BackgroundTransparency = 1,
		Size = env.UDim2.new(1, 0, 0, 20),
		Text = text,
		TextWrapped = true,
		TextXAlignment = env.Enum.TextXAlignment.Left,
	}, parent)
end

local function box(env, parent, order, name, text, placeholder)
	return make(env, "TextBox", {
		Name = name,
		LayoutOrder = order,
		Size = env.UDim2.new(1, 0, 0, 24),
		Text = text,
		PlaceholderText = placeholder,
		ClearTextOnFocus = false,
		TextXAlignment = env.Enum.TextXAlignment.Left,
	}, parent)
end

local function button(env, parent, order, name, text)
	return make(env, "TextButton", {
		Name = name,
		LayoutOrder = order,
		Size = env.UDim2.new(1, 0, 0, 28),
		Text = text,
	}, parent)
end

-- Creates the toolbar button and the widget (hidden until the button is clicked).
-- handlers: onConnect(), onDisconnect(), onUrl(text), onToken(text), onAutoConnect(bool).
-- initial: {url, token, autoConnect}.
function Ui.new(plugin, env, handlers, initial)
	local self = setmetatable({}, Ui)
	self.env = env
	self.handlers = handlers
	self.connected = false
	self.autoConnect = initial.autoConnect and true or false

	local toolbar = plugin:CreateToolbar("Runbox")
	self.toolbarButton = toolbar:CreateButton("Runbox", "Show the Runbox bridge (connect Studio to your AI assistant)", "")
	self.toolbarButton.ClickableWhenViewportHidden = true

	local info = env.DockWidgetPluginGuiInfo.new(env.Enum.InitialDockState.Right, false, false, 320, 260, 240, 200)
	-- CreateDockWidgetPluginGuiAsync replaced CreateDockWidgetPluginGui; older Studios have only
	-- the latter (and indexing a member that does not exist raises).
	-- Fall back only when the new method is missing; when it exists but fails (the widget id is
	-- still taken after a reload), the old one would fail too: go on without a widget rather
	-- than stop the plugin.
	local hasAsync = pcall(function()
		return plugin.CreateDockWidgetPluginGuiAsync
	end) and plugin.CreateDockWidgetPluginGuiAsync ~= nil
	local okW, widget
	if hasAsync then
		okW, widget = pcall(function()
			return plugin:CreateDockWidgetPluginGuiAsync(Ui.WIDGET_ID, info)
		end)
	else
		okW, widget = pcall(function()
			return plugin:CreateDockWidgetPluginGui(Ui.WIDGET_ID, info)
		end)
	end
	if not okW or widget == nil then
		widget = env.Instance.new("Frame") -- a stand-in nobody sees: the plugin keeps running
		self.noWidget = tostring(widget == nil and "no widget" or (okW and "no widget" or widget))
	end
	self.widget = widget
	pcall(function()
		self.widget.Title = "Runbox Bridge" -- the stand-in Frame has no Title
	end)

	local root = make(env, "Frame", {
		Name = "Root",
		Size = env.UDim2.new(1, 0, 1, 0),
		BackgroundTransparency = 1,
	}, self.widget)
	make(env, "UIPadding", {
		PaddingLeft = env.UDim.new(0, 8),
		PaddingRight = env.UDim.new(0, 8),
		PaddingTop = env.UDim.new(0, 8),
	}, root)
	make(env, "UIListLayout", {
		Padding = env.UDim.new(0, 6),
		SortOrder = env.Enum.SortOrder.LayoutOrder,
	}, root)

	-- what takes a theme colour: {inst, property, style guide item, fallback}
	self.themed = {}
	local function themed(inst, prop, item, fallback)
		table.insert(self.themed, { inst, prop, item, fallback })
		return inst
	end
	local grey = env.Color3.new(0.8, 0.8, 0.8)
	local function themedLabel(order, text)
		return themed(label(env, root, order, text), "TextColor3", "MainText", grey)
	end
	local function themedField(inst, bg, text)
		themed(inst, "BackgroundColor3", bg, nil)
		return themed(inst, "TextColor3", text, nil)
	end

	self.stateLabel = label(env, root, 1, Ui.STATE_TEXT.disconnected)
	self.detailLabel = themedLabel(2, "")
	self.detailLabel.Size = env.UDim2.new(1, 0, 0, 64)
	self.detailLabel.TextYAlignment = env.Enum.TextYAlignment.Top
	themedLabel(3, "Daemon URL")
	self.urlBox = themedField(box(env, root, 4, "Url", initial.url or "", "http://127.0.0.1:7766"),
		"InputFieldBackground", "MainText")
	themedLabel(5, "Token (only if the daemon uses RUNBOX_TOKEN)")
	self.tokenBox = themedField(box(env, root, 6, "Token", initial.token or "", "no token"),
		"InputFieldBackground", "MainText")
	self.autoButton = themedField(button(env, root, 7, "AutoConnect", ""), "Button", "ButtonText")
	self.connectButton = themedField(button(env, root, 8, "Connect", "Connect"), "Button", "ButtonText")
	self:applyTheme()

	local ui = self
	self.toolbarButton.Click:Connect(function()
		ui.widget.Enabled = not ui.widget.Enabled
		ui.toolbarButton:SetActive(ui.widget.Enabled)
	end)
	-- Closed with its X, or opened by Studio restoring the layout: the button follows.
	pcall(function()
		ui.widget:GetPropertyChangedSignal("Enabled"):Connect(function()
			ui.toolbarButton:SetActive(ui.widget.Enabled)
		end)
	end)
	pcall(function()
		env.studioSettings().ThemeChanged:Connect(function()
			ui:applyTheme()
		end)
	end)
	self.urlBox.FocusLost:Connect(function()
		handlers.onUrl(ui.urlBox.Text)
	end)
	self.tokenBox.FocusLost:Connect(function()
		handlers.onToken(ui.tokenBox.Text)
	end)
	self.autoButton.MouseButton1Click:Connect(function()
		ui.autoConnect = not ui.autoConnect
		ui:refreshAuto()
		handlers.onAutoConnect(ui.autoConnect)
	end)
	self.connectButton.MouseButton1Click:Connect(function()
		if ui.connected then
			handlers.onDisconnect()
		else
			handlers.onConnect()
		end
	end)
	self:refreshAuto()
	return self
end

-- Sets every themed colour from Studio's current theme (a fallback, or nothing, without one).
function Ui:applyTheme()
	for _, t in ipairs(self.themed) do
		local c = themeColor(self.env, t[3], t[4])
		if c ~= nil then
			t[1][t[2]] = c
		end
	end
end

function Ui:refreshAuto()
	self.autoButton.Text = "Connect when Studio opens: " .. (self.autoConnect and "on" or "off")
end

-- Shows a bridge state ("connected", "retrying", ...) and its detail text.
function Ui:setState(state, detail)
	local env = self.env
	self.state = state
	self.stateLabel.Text = Ui.STATE_TEXT[state] or tostring(state)
	local c = STATE_COLOR[state] or STATE_COLOR.disconnected
	self.stateLabel.TextColor3 = env.Color3.new(c[1], c[2], c[3])
	self.detailLabel.Text = detail or ""
	self.connected = state ~= "disconnected"
	self.connectButton.Text = self.connected and "Disconnect" or "Connect"
	if state == "blocked" then
		-- A problem only the user can fix: make sure they see it.
		self.widget.Enabled = true
		self.toolbarButton:SetActive(true)
	end
end

return Ui

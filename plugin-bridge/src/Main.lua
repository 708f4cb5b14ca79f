-- Main.lua: wires the plugin together in one Studio DataModel.
--
-- In the edit DataModel it builds the toolbar button and widget, reads the saved settings
-- (daemon URL, token, auto-connect), and connects when asked. Play tests start extra copies of
-- every plugin in the server and client DataModels; those have no widget. The server copy
-- connects, with role server and its edit window's instance id as parent (from the test
-- arguments Runbox starts tests with), when Runbox started the test or the saved
-- "RunboxConnected" flag says an edit copy is connected, so the daemon can send it the
-- play-mode tools; it also watches for stop_play requests. Client copies never poll (they get
-- no commands, and each poll would spend the shared request budget). Every copy that connects
-- forwards its Output to the daemon.
-- On plugin.Unloading (plugin disabled, updated, or the place closing) the copy disconnects at
-- once so the daemon fails its pending calls immediately.

local Http = require(script.Parent.Http)
local Bridge = require(script.Parent.Bridge)
local Executor = require(script.Parent.Executor)
local Console = require(script.Parent.Console)
local Ui = require(script.Parent.Ui)

local Main = {}

Main.VERSION = "0.1.0"
Main.DEFAULT_URL = "http://127.0.0.1:7766"
Main.PLAY_LIMIT = 60 -- requests a minute for each play-test copy
Main.KEYS = {
	url = "RunboxUrl",
	token = "RunboxToken",
	autoConnect = "RunboxAutoConnect",
	connected = "RunboxConnected",
}

-- The environment in Studio: Roblox's globals and services. Tests build their own (the same
-- fields backed by fakes, LuaSocket and a scheduler).
function Main.studioEnv()
	local HttpService = game:GetService("HttpService")
	return {
		game = game,
		Instance = Instance,
		Color3 = Color3,
		UDim = UDim,
		UDim2 = UDim2,
		Enum = Enum,
		DockWidgetPluginGuiInfo = DockWidgetPluginGuiInfo,
		studioSettings = function()
			return settings().Studio
		end,
		spawn = task.spawn,
		wait = task.wait,
		pcall = pcall,
		clock = os.clock,
		random = math.random,
		now = function()
			return DateTime.now().UnixTimestampMillis / 1000
		end,
		guid = function()
			return HttpService:GenerateGUID(false)
		end,
		request = function(req)
			return HttpService:RequestAsync(req)
		end,
		json = {
			encode = function(v)
				return HttpService:JSONEncode(v)
			end,
			decode = function(s)
				return HttpService:JSONDecode(s)
			end,
		},
		tools = require(script.Parent.Tools),
		log = function(message)
			print(Console.PREFIX .. " " .. message)
		end,
	}
end

-- "edit" while RunService:IsEdit(); in a test (running or paused: then both IsEdit and
-- IsRunning are false), "server" or "client" after the DataModel.
function Main.roleOf(runService)
	if runService:IsEdit() then
		return "edit"
	end
	if runService:IsServer() then
		return "server"
	end
	return "client"
end

-- Plugin settings are stored in a file that backslashes and quotes can corrupt (Plugin.yaml,
-- SetSetting): such values are refused. Returns nil or the reason.
function Main.badSettingValue(text)
	if string.find(text, "[\\\"]") then
		return "a backslash or a double quote cannot be saved in Studio's plugin settings"
	end
	return nil
end

local function setting(plugin, key, default)
	local ok, value = pcall(function()
		return plugin:GetSetting(key)
	end)
	if not ok or value == nil then
		return default
	end
	return value
end

local function save(plugin, key, value)
	pcall(function()
		plugin:SetSetting(key, value)
	end)
end

-- Starts the plugin; returns a controller {bridge, console, ui, role, connect(), disconnect()}.
function Main.start(plugin, env)
	env = env or Main.studioEnv()
	local game = env.game
	local runService = game:GetService("RunService")
	local role = Main.roleOf(runService)
	local self = { role = role, env = env, plugin = plugin }
	local PlayStop = require(script.Parent.tools.PlayStop)
	-- The edit window a test server belongs to (a test Runbox started says so).
	local testInfo = role ~= "edit" and PlayStop.testArgs(game:GetService("StudioTestService")) or nil
	self.parent = testInfo and testInfo.parent or nil
	self.url = setting(plugin, Main.KEYS.url, Main.DEFAULT_URL)
	self.token = setting(plugin, Main.KEYS.token, "")
	self.autoConnect = setting(plugin, Main.KEYS.autoConnect, false) == true
	self.instanceId = env.guid()

	local log = env.log or function() end
	-- Request budget per minute: Roblox's 500 is shared by every plugin, and a play test runs up
	-- to three copies of this one (edit, server, client), so the play copies get a small share.
	local limit = role == "edit" and Http.DEFAULT_LIMIT or Main.PLAY_LIMIT
	self.http = Http.new({ request = env.request, pcall = env.pcall, clock = env.clock, wait = env.wait, token = self.token, limit = limit })

	local bridge -- assigned below; Console sends through it
	self.console = Console.new({
		send = function(entries)
			return bridge:sendConsole(entries)
		end,
		spawn = env.spawn,
		wait = env.wait,
		now = env.now,
		clock = env.clock,
	})
	self.logConnection = self.console:attach(game:GetService("LogService"))

	local history = game:GetService("ChangeHistoryService")
	local finishOps = { Commit = env.Enum.FinishRecordingOperation.Commit, Cancel = env.Enum.FinishRecordingOperation.Cancel }
	-- A reload does not cancel a recording the previous copy left open (plugins.md), and while
	-- one is open every TryBeginRecording fails: Runbox's writes would go unrecorded (no undo,
	-- no rollback). Cancel it ("the identifier is ignored" for Cancel).
	if role == "edit" then
		local okOpen, open = pcall(function()
			return history:IsRecordingInProgress()
		end)
		if okOpen and open then
			local okCancel, err = pcall(function()
				history:FinishRecording("", finishOps.Cancel)
			end)
			log(okCancel and "cancelled an undo recording a previous plugin copy left open"
				or ("an undo recording is still open and could not be cancelled: " .. tostring(err)))
		end
	end
	-- What every tool handler gets besides its arguments.
	local ctx = {
		game = game,
		services = setmetatable({}, {
			__index = function(_, name)
				return game:GetService(name)
			end,
		}),
		plugin = plugin,
		role = role,
		instanceId = self.instanceId,
		log = log,
	}

	local function makeBridge()
		bridge = Bridge.new({
			http = self.http,
			json = env.json,
			url = self.url,
			instanceId = self.instanceId,
			identity = function()
				return { role = role, placeId = game.PlaceId, placeName = game.Name, parent = self.parent }
			end,
			executorFactory = function(deliver)
				return Executor.new({
					tools = env.tools,
					deliver = deliver,
					spawn = env.spawn,
					pcall = env.pcall,
					history = history,
					finishOps = finishOps,
					ctx = ctx,
					log = log,
				})
			end,
			console = self.console,
			spawn = env.spawn,
			wait = env.wait,
			random = env.random,
			onState = function(state, detail)
				if self.ui ~= nil then
					self.ui:setState(state, detail)
				end
			end,
			log = log,
		})
		self.bridge = bridge
	end
	makeBridge()

	function self.connect()
		if bridge.running then
			return
		end
		makeBridge() -- picks up a changed URL
		self.http.token = self.token
		if role == "edit" then
			save(plugin, Main.KEYS.connected, true)
		end
		bridge:start()
	end

	function self.disconnect(reason)
		if role == "edit" then
			save(plugin, Main.KEYS.connected, false)
		end
		bridge:stop(reason or "Disconnected.")
	end

	if role == "edit" then
		self.ui = Ui.new(plugin, env, {
			onConnect = self.connect,
			onDisconnect = function()
				self.disconnect("Disconnected. Click Connect to connect again.")
			end,
			onUrl = function(text)
				text = string.gsub(tostring(text), "^%s+", "")
				text = string.gsub(text, "%s+$", "")
				if text == "" then
					text = Main.DEFAULT_URL
				end
				local bad = Main.badSettingValue(text)
				if bad then
					self.ui:setState(bridge.state, "Not saved: " .. bad .. ".")
					return
				end
				if text ~= self.url then
					self.url = text
					save(plugin, Main.KEYS.url, text)
					if bridge.running then
						self.disconnect("Reconnecting to " .. text)
						self.connect()
					end
				end
			end,
			onToken = function(text)
				local bad = Main.badSettingValue(tostring(text))
				if bad then
					self.ui:setState(bridge.state, "Token not saved: " .. bad .. ".")
					return
				end
				self.token = tostring(text)
				save(plugin, Main.KEYS.token, self.token)
				self.http.token = self.token
			end,
			onAutoConnect = function(on)
				self.autoConnect = on
				save(plugin, Main.KEYS.autoConnect, on)
			end,
		}, { url = self.url, token = self.token, autoConnect = self.autoConnect })
		self.ui:setState("disconnected", "Start the daemon, then click Connect.")
	end

	-- In a play test's server DataModel, end the test when the edit copy asks (stop_play):
	-- StudioTestService:EndTest only works here, so the request travels by plugin setting.
	if role == "server" then
		local okWatch, stopWatch = pcall(function()
			return PlayStop.watch(plugin, game:GetService("StudioTestService"))
		end)
		if okWatch then
			self.stopWatch = stopWatch
		else
			log("cannot watch for stop_play requests: " .. tostring(stopWatch))
		end
	end

	plugin.Unloading:Connect(function()
		if self.stopWatch ~= nil then
			self.stopWatch()
		end
		if self.logConnection ~= nil then
			self.logConnection:Disconnect()
		end
		-- Not self.disconnect: the saved flag stays as the user left it.
		bridge:stop("The plugin is unloading.")
	end)

	-- The "connected" flag is shared by every Studio window: a window that opens without
	-- auto-connect leaves it alone (writing false here would cut another window's play tests
	-- off). A test Runbox started always connects its server copy.
	local shouldConnect
	if role == "edit" then
		shouldConnect = self.autoConnect
	elseif role == "server" then
		shouldConnect = testInfo ~= nil or setting(plugin, Main.KEYS.connected, false) == true
	else
		shouldConnect = false
	end
	if shouldConnect then
		self.connect()
	end
	return self
end

return Main

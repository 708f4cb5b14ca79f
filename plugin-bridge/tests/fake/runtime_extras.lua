-- tests/fake/runtime_extras.lua - what the plugin RUNTIME tests need beyond the fake DataModel:
-- a task scheduler (virtual or real time), a yield-safe pcall for lua5.1, signals, a fake
-- `plugin` object (settings, toolbar, dock widget, Unloading), minimal UI instances, fake
-- RunService / LogService / ChangeHistoryService, and an env table for Main.start.
--
-- Scheduler model: threads never park themselves; they yield a request ("wait", seconds) to
-- whoever resumed them. ypcall forwards such yields outward, so a handler may wait inside the
-- executor's pcall (lua5.1's pcall cannot be yielded across, Luau's can).

local L = require("luau")

local X = {}

local function pack(...)
	return { n = select("#", ...), ... }
end

-- pcall that lets f yield (the yield goes to our resumer, and its answer comes back to f).
function X.ypcall(f, ...)
	local co = coroutine.create(f)
	local r = pack(coroutine.resume(co, ...))
	while true do
		if not r[1] then
			return false, r[2]
		end
		if coroutine.status(co) == "dead" then
			return unpack(r, 1, r.n)
		end
		r = pack(coroutine.resume(co, coroutine.yield(unpack(r, 2, r.n))))
	end
end

-- Wraps a coroutine-based pcall so it also takes C functions (coroutine.create refuses them;
-- Roblox's pcall does not).
function X.cSafe(basePcall)
	return function(f, ...)
		if type(f) == "function" and debug.getinfo(f, "S").what == "C" then
			local cf = f
			return basePcall(function(...)
				return cf(...)
			end, ...)
		end
		return basePcall(f, ...)
	end
end
X.ypcall = X.cSafe(X.ypcall)

-- A scheduler. opts.real = true: real time (socket.gettime / socket.sleep), else virtual time
-- that jumps to the next timer when every thread waits.
function X.scheduler(opts)
	opts = opts or {}
	local s = { t = 0, timers = {}, errors = {}, seq = 0 }
	local socket = opts.real and require("socket") or nil
	function s.clock()
		if socket then
			return socket.gettime()
		end
		return s.t
	end
	local function addTimer(at, co)
		s.seq = s.seq + 1
		table.insert(s.timers, { at = at, co = co, seq = s.seq })
	end
	local ioWaits = {} -- {sock, mode ("r"|"w"), deadline, co}
	local function handle(co, r)
		if not r[1] then
			table.insert(s.errors, tostring(r[2]))
			if opts.onError then
				opts.onError(r[2], co)
			else
				io.stderr:write("thread error: " .. tostring(r[2]) .. "\n")
			end
			return
		end
		if coroutine.status(co) == "dead" then
			return
		end
		if r[2] == "wait" then
			addTimer(s.clock() + (r[3] or 0), co)
		elseif r[2] == "io" then
			table.insert(ioWaits, { sock = r[3], mode = r[4], deadline = r[5], co = co })
		end
	end
	-- Real mode only: parks the thread until sock is readable ("r") or writable ("w"), or the
	-- deadline (absolute clock) passes. Returns true when ready, false on timeout.
	function s.waitIo(sock, mode, deadline)
		return coroutine.yield("io", sock, mode, deadline)
	end
	-- Waits up to `timeout` seconds for socket activity and resumes the ready threads.
	local function pollIo(timeout)
		if #ioWaits == 0 then
			if timeout > 0 then
				socket.sleep(timeout)
			end
			return
		end
		local readers, writers = {}, {}
		local now = s.clock()
		for _, w in ipairs(ioWaits) do
			if w.deadline ~= nil and w.deadline - now < timeout then
				timeout = math.max(0, w.deadline - now)
			end
			table.insert(w.mode == "r" and readers or writers, w.sock)
		end
		local r, w = socket.select(readers, writers, timeout)
		local ready = {}
		for _, x in ipairs(r or {}) do
			ready[x] = true
		end
		for _, x in ipairs(w or {}) do
			ready[x] = true
		end
		now = s.clock()
		local keep, wake = {}, {}
		for _, wt in ipairs(ioWaits) do
			if ready[wt.sock] then
				table.insert(wake, { wt.co, true })
			elseif wt.deadline ~= nil and now >= wt.deadline then
				table.insert(wake, { wt.co, false })
			else
				table.insert(keep, wt)
			end
		end
		ioWaits = keep
		for _, x in ipairs(wake) do
			handle(x[1], pack(coroutine.resume(x[1], x[2])))
		end
	end
	-- task.spawn: runs fn now, until it first waits.
	function s.spawn(fn, ...)
		local co = coroutine.create(fn)
		handle(co, pack(coroutine.resume(co, ...)))
		return co
	end
	-- task.wait: inside a thread, yields; on the main thread, runs the scheduler meanwhile.
	function s.wait(seconds)
		seconds = seconds or 0
		local start = s.clock()
		if coroutine.running() == nil then
			s.run(start + seconds)
		else
			coroutine.yield("wait", seconds)
		end
		return s.clock() - start
	end
	-- Runs due timers until `untilTime` (nil = until none is left); stop() -> true ends early.
	function s.run(untilTime, stop)
		while true do
			if stop and stop() then
				return true
			end
			table.sort(s.timers, function(a, b)
				if a.at == b.at then
					return a.seq < b.seq
				end
				return a.at < b.at
			end)
			local nextTimer = s.timers[1]
			local horizon = untilTime -- when we must be back, nil = whenever
			if nextTimer ~= nil and (horizon == nil or nextTimer.at < horizon) then
				horizon = nextTimer.at
			end
			if nextTimer ~= nil and nextTimer.at <= s.clock() then
				table.remove(s.timers, 1)
				handle(nextTimer.co, pack(coroutine.resume(nextTimer.co, s.clock() - nextTimer.at)))
			elseif socket ~= nil and #ioWaits > 0 then
				local slice = 1
				if horizon ~= nil then
					slice = math.max(0, math.min(horizon - s.clock(), 1))
				end
				pollIo(slice)
				if untilTime ~= nil and s.clock() >= untilTime then
					return stop ~= nil and stop() or false
				end
			elseif horizon == nil then
				return stop ~= nil and stop() or false -- nothing left to run
			elseif nextTimer == nil or nextTimer.at > horizon then
				-- Only the caller's horizon is left.
				if socket ~= nil then
					socket.sleep(math.max(0, horizon - s.clock()))
				else
					s.t = math.max(s.t, horizon)
				end
				return stop ~= nil and stop() or false
			else
				if socket ~= nil then
					socket.sleep(math.max(0, nextTimer.at - s.clock()))
				else
					s.t = math.max(s.t, nextTimer.at)
				end
			end
		end
	end
	return s
end

-- RBXScriptSignal stand-in: the fake environment's signal, plus a count of live connections.
function X.signal()
	local sig = L.signal()
	function sig:count()
		local n = 0
		for _, h in ipairs(sig.handlers) do
			if h.connected then
				n = n + 1
			end
		end
		return n
	end
	return sig
end

-- Minimal UI instance: properties are free-form, some events exist, Parent links children.
local UI_EVENTS = {
	TextBox = { "FocusLost" },
	TextButton = { "MouseButton1Click" },
	DockWidgetPluginGui = {},
}
function X.uiInstance(className)
	local inst = { ClassName = className, Name = className, children = {} }
	for _, e in ipairs(UI_EVENTS[className] or {}) do
		inst[e] = X.signal()
	end
	return setmetatable(inst, {
		__newindex = function(t, k, v)
			if k == "Parent" and v ~= nil then
				table.insert(v.children, t)
			end
			rawset(t, k, v)
		end,
	})
end

-- Finds a UI descendant by Name.
function X.find(root, name)
	for _, c in ipairs(root.children or {}) do
		if c.Name == name then
			return c
		end
		local d = X.find(c, name)
		if d then
			return d
		end
	end
	return nil
end

-- The `plugin` global: settings (a table you pass, persisted there), toolbar, dock widget.
function X.fakePlugin(settings)
	local plugin = { settings = settings or {}, Unloading = X.signal(), toolbars = {}, widgets = {} }
	function plugin:GetSetting(key)
		return self.settings[key]
	end
	function plugin:SetSetting(key, value)
		self.settings[key] = value
	end
	function plugin:CreateToolbar(name)
		local toolbar = { name = name, buttons = {} }
		function toolbar:CreateButton(id, tip, icon)
			local b = { id = id, tip = tip, icon = icon, Click = X.signal(), active = false }
			function b:SetActive(on)
				self.active = on
			end
			table.insert(toolbar.buttons, b)
			return b
		end
		table.insert(self.toolbars, toolbar)
		return toolbar
	end
	-- The widget's Enabled fires GetPropertyChangedSignal("Enabled") when it changes (the user
	-- closing it with its X is widget.Enabled = false).
	function plugin:CreateDockWidgetPluginGuiAsync(id, info)
		local w = X.uiInstance("DockWidgetPluginGui")
		local enabled, changed = info.InitialEnabled, X.signal()
		w.Name = id
		function w:GetPropertyChangedSignal(prop)
			assert(prop == "Enabled", "the fake widget signals Enabled only")
			return changed
		end
		local mt = getmetatable(w)
		local newindex = mt.__newindex
		mt.__index = function(_, k)
			if k == "Enabled" then
				return enabled
			end
			return nil
		end
		mt.__newindex = function(t, k, v)
			if k == "Enabled" then
				local was = enabled
				enabled = v
				if was ~= v then
					changed:Fire()
				end
				return
			end
			newindex(t, k, v)
		end
		self.widgets[id] = w
		return w
	end
	return plugin
end

local function enumItems(typeName, names)
	local e = {}
	for i, n in ipairs(names) do
		e[n] = { Name = n, Value = i - 1, EnumType = typeName }
	end
	return e
end

X.Enum = {
	FinishRecordingOperation = enumItems("FinishRecordingOperation", { "Cancel", "Commit", "Append" }),
	MessageType = enumItems("MessageType", { "MessageOutput", "MessageInfo", "MessageWarning", "MessageError" }),
	InitialDockState = enumItems("InitialDockState", { "Top", "Bottom", "Left", "Right", "Float" }),
	TextXAlignment = enumItems("TextXAlignment", { "Left", "Right", "Center" }),
	TextYAlignment = enumItems("TextYAlignment", { "Top", "Center", "Bottom" }),
	SortOrder = enumItems("SortOrder", { "Name", "Custom", "LayoutOrder" }),
	StudioStyleGuideColor = enumItems("StudioStyleGuideColor",
		{ "MainBackground", "MainText", "InputFieldBackground", "Button", "ButtonText" }),
}

-- settings().Studio: a Theme whose GetColor gives {theme = name, item = item name}, and
-- ThemeChanged; X.setTheme(studio, name) switches and fires it.
function X.studioSettings()
	local studio = { ThemeChanged = X.signal() }
	studio.Theme = {
		Name = "Dark",
		GetColor = function(self, item)
			return { theme = self.Name, item = item.Name }
		end,
	}
	return studio
end

function X.setTheme(studio, name)
	studio.Theme.Name = name
	studio.ThemeChanged:Fire()
end

-- ChangeHistoryService that records what happened: log = {"begin Runbox: x", "Commit rec1", ...}.
function X.history()
	local h = { log = {}, open = nil, n = 0, refuse = false }
	function h:TryBeginRecording(name)
		if self.refuse or self.open ~= nil then
			return nil
		end
		self.n = self.n + 1
		self.open = "rec" .. self.n
		table.insert(self.log, "begin " .. name)
		return self.open
	end
	function h:FinishRecording(id, op)
		assert(id == self.open, "FinishRecording: not the open recording")
		self.open = nil
		table.insert(self.log, op.Name .. " " .. id)
	end
	return h
end

-- A fake `game` with the services Main uses. opts.role: "edit" | "server" | "client";
-- opts.paused: the test is paused (IsEdit and IsRunning both false, as in the engine);
-- opts.testArgs: what StudioTestService:GetTestArgs returns.
function X.game(opts)
	opts = opts or {}
	local role = opts.role or "edit"
	local services = {
		RunService = {
			IsEdit = function()
				return role == "edit"
			end,
			IsRunning = function()
				return role ~= "edit" and not opts.paused
			end,
			IsRunMode = function()
				return false
			end,
			-- As in the engine: an edit DataModel is both server and client.
			IsServer = function()
				return role == "server" or role == "edit"
			end,
			IsClient = function()
				return role == "client" or role == "edit"
			end,
		},
		LogService = { MessageOut = X.signal() },
		ChangeHistoryService = opts.history or X.history(),
		StudioTestService = {
			ended = {},
			EndTest = function(self, value)
				table.insert(self.ended, value)
			end,
			GetTestArgs = function()
				return opts.testArgs
			end,
		},
	}
	local game = { PlaceId = opts.placeId or 4242, Name = opts.placeName or "Test Place", services = services }
	function game:GetService(name)
		local svc = services[name]
		assert(svc ~= nil, "fake game: no service " .. tostring(name))
		return svc
	end
	return game
end

-- JSON through lua-cjson, configured like the daemon expects (sparse arrays allowed).
function X.json()
	local cjson = require("cjson")
	local c = cjson.new()
	c.encode_sparse_array(true)
	return {
		encode = function(v)
			return c.encode(v)
		end,
		decode = function(s)
			return c.decode(s)
		end,
		null = c.null,
	}
end

-- An env for Main.start: sched (scheduler), request (RequestAsync-like), tools, game.
function X.env(opts)
	local UDim = {
		new = function(s, o)
			return { Scale = s, Offset = o }
		end,
	}
	local n = 0
	return {
		game = opts.game or X.game(),
		Instance = { new = X.uiInstance },
		Color3 = {
			new = function(r, g, b)
				return { R = r, G = g, B = b }
			end,
		},
		UDim = UDim,
		UDim2 = {
			new = function(a, b, c, d)
				return { X = UDim.new(a, b), Y = UDim.new(c, d) }
			end,
		},
		Enum = X.Enum,
		studioSettings = opts.studio and function()
			return opts.studio
		end or nil,
		DockWidgetPluginGuiInfo = {
			new = function(state, enabled, override, fx, fy, mw, mh)
				return { InitialDockState = state, InitialEnabled = enabled, FloatingXSize = fx, FloatingYSize = fy }
			end,
		},
		spawn = opts.sched.spawn,
		wait = opts.sched.wait,
		pcall = X.ypcall,
		clock = opts.sched.clock,
		random = function()
			return 0.5
		end,
		now = function()
			return 1700000000 + opts.sched.clock()
		end,
		guid = opts.guid or function()
			n = n + 1
			return string.format("{00000000-0000-4000-8000-%012d}", n)
		end,
		request = opts.request,
		json = opts.json or X.json(),
		tools = opts.tools,
		log = opts.log or function() end,
	}
end

return X

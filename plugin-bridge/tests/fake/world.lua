-- tests/fake/world.lua - the classes of the fake DataModel: parts, models, scripts, GUI objects,
-- values, and the services the plugin uses (HttpService, ChangeHistoryService,
-- ScriptEditorService, LogService, Selection, CollectionService, StudioTestService, RunService,
-- InsertService) with just enough behaviour to test the plugin against.

local cjson = require("cjson")
local D = require("datatypes")
local I = require("instance")
local L = require("luau")

local NILREF = I.NILREF
local state = I.state
local def = I.defineClass
local V3, CF, C3 = D.Vector3, D.CFrame, D.Color3

---------------------------------------------------------------- world classes
def("PVInstance", { creatable = false })
def("BasePart", {
	super = "PVInstance",
	creatable = false,
	props = {
		Anchored = false, CanCollide = true, Locked = false, Transparency = 0, Reflectance = 0,
		Size = V3.new(4, 1, 2), CFrame = CF.new(), Color = C3.fromRGB(163, 162, 165),
		BrickColor = D.BrickColor.new("Medium stone grey"), Material = D.Enum.Material.Plastic,
		Massless = false, CustomPhysicalProperties = I.nilOf("PhysicalProperties"),
	},
	-- float32 and Color3uint8 storage, as in the engine (gap 2 of the audit)
	store = { Transparency = I.storeFloat, Reflectance = I.storeFloat, Color = I.storeColor8, Size = I.storeVector3 },
	computed = {
		Position = {
			get = function(p) return state[p].props.CFrame.Position end,
			set = function(p, v)
				if D.typeof(v) ~= "Vector3" then
					error("Unable to assign property Position. Vector3 expected, got " .. D.typeof(v), 3)
				end
				local cf = state[p].props.CFrame
				state[p].props.CFrame = cf.Rotation + v
			end,
		},
	},
})
def("Part", { super = "BasePart", props = { Shape = D.Enum.PartType.Block } })
def("SpawnLocation", { super = "Part", props = { Duration = 10 } })
def("MeshPart", { super = "BasePart", props = { MeshId = "", TextureID = "" } })
def("WedgePart", { super = "BasePart" })
def("Terrain", { super = "BasePart", creatable = false })
def("Model", { super = "PVInstance", props = { PrimaryPart = NILREF, WorldPivot = CF.new() } })
def("Folder", {})
def("Camera", { props = { CFrame = CF.new(0, 10, 20), FieldOfView = 70, CameraSubject = NILREF } })
def("LuaSourceContainer", { creatable = false, props = { Source = "" } })
def("BaseScript", { super = "LuaSourceContainer", creatable = false, props = { Enabled = true, Disabled = false } })
def("Script", { super = "BaseScript" })
def("LocalScript", { super = "BaseScript" })
def("ModuleScript", { super = "LuaSourceContainer" })
def("GuiBase2d", { creatable = false })
def("LayerCollector", { super = "GuiBase2d", creatable = false, props = { Enabled = true } })
def("ScreenGui", { super = "LayerCollector", props = { ResetOnSpawn = true, DisplayOrder = 0 } })
def("GuiObject", {
	super = "GuiBase2d",
	creatable = false,
	props = {
		Size = D.UDim2.new(0, 100, 0, 100), Position = D.UDim2.new(0, 0, 0, 0),
		AnchorPoint = D.Vector2.new(0, 0), BackgroundColor3 = C3.new(1, 1, 1), BackgroundTransparency = 0,
		Visible = true, ZIndex = 1, LayoutOrder = 0,
	},
})
def("Frame", { super = "GuiObject" })
def("TextLabel", { super = "GuiObject", props = { Text = "Label", TextColor3 = C3.new(0, 0, 0), TextSize = 14,
	FontFace = D.Font.new("rbxasset://fonts/families/LegacyArial.json") } })
def("TextButton", { super = "GuiObject", props = { Text = "Button", TextColor3 = C3.new(0, 0, 0), TextSize = 14 } })
def("ImageLabel", { super = "GuiObject", props = { Image = "", SliceCenter = D.Rect.new(0, 0, 0, 0),
	ImageContent = D.Content.none } })
def("Handles", { props = { Faces = D.Faces.new(D.Enum.NormalId.Top, D.Enum.NormalId.Bottom) } })
def("ArcHandles", { props = { Axes = D.Axes.new(D.Enum.Axis.X) } })
def("Vector3int16Holder", { creatable = false, props = { Cell = D.Vector3int16.new(0, 0, 0),
	Offset = D.Vector2int16.new(0, 0), Area = D.Region3.new(V3.new(0, 0, 0), V3.new(2, 2, 2)),
	Cells = D.Region3int16.new(D.Vector3int16.new(0, 0, 0), D.Vector3int16.new(1, 1, 1)),
	Beam = D.Ray.new(V3.new(0, 0, 0), V3.new(0, 0, 1)) } })
def("UIPadding", { props = { PaddingLeft = D.UDim.new(0, 0), PaddingRight = D.UDim.new(0, 0),
	PaddingTop = D.UDim.new(0, 0), PaddingBottom = D.UDim.new(0, 0) } })
def("UIListLayout", { props = { SortOrder = D.Enum.SortOrder.LayoutOrder, Padding = D.UDim.new(0, 0) } })
def("ParticleEmitter", {
	props = {
		Rate = 20, Enabled = true, Lifetime = D.NumberRange.new(5, 10), Size = D.NumberSequence.new(1),
		Transparency = D.NumberSequence.new(0), Color = D.ColorSequence.new(C3.new(1, 1, 1)),
	},
})
def("Decal", { props = { Texture = "", Transparency = 0 } })
def("PointLight", { props = { Brightness = 1, Range = 8, Color = C3.new(1, 1, 1), Enabled = true } })
def("Sound", { props = { SoundId = "", Volume = 0.5, Playing = false, Looped = false } })
def("WeldConstraint", { props = { Part0 = NILREF, Part1 = NILREF, Enabled = true } })
def("ObjectValue", { props = { Value = NILREF } })
def("StringValue", { props = { Value = "" } })
def("IntValue", { props = { Value = 0 } })
def("NumberValue", { props = { Value = 0 } })
def("BoolValue", { props = { Value = false } })
def("Vector3Value", { props = { Value = V3.new(0, 0, 0) } })
def("Humanoid", { props = { Health = 100, MaxHealth = 100, WalkSpeed = 16 } })
def("Team", { props = { TeamColor = D.BrickColor.new("White") } })

---------------------------------------------------------------- plain services
local function service(name, spec)
	spec = spec or {}
	spec.creatable = false
	spec.service = true
	def(name, spec)
end
service("Workspace", { super = "Model", props = { Gravity = 196.2, CurrentCamera = NILREF } })
service("Lighting", { props = { Brightness = 2, ClockTime = 14, Ambient = C3.new(0, 0, 0),
	OutdoorAmbient = C3.fromRGB(128, 128, 128), FogEnd = 100000 } })
service("ReplicatedStorage")
service("ReplicatedFirst")
service("ServerScriptService", { props = { LoadStringEnabled = false } })
service("ServerStorage")
service("StarterGui")
service("StarterPack")
service("StarterPlayer", { props = { CharacterWalkSpeed = 16 } })
service("Players", { props = { MaxPlayers = 8 } })
service("Teams")
service("SoundService", { props = { RespectFilteringEnabled = true } })
service("Chat")
service("TextChatService")
-- Studio and plugin internals (gap 8): other plugins' widgets live in PluginGuiService; CoreGui
-- holds instances a plugin may not even name (reading .Name raises, as for RobotoGui's guts).
service("CoreGui")
service("PluginGuiService")
def("LockedScript", {
	super = "Script",
	creatable = false,
	computed = {
		Name = { get = function() error("The current thread cannot access 'RobloxGui' (lacking capability RobloxScript)", 2) end },
	},
})

---------------------------------------------------------------- HttpService
-- JSONEncode behaves like Roblox's: numbers with full precision (%.17g, so doubles round-trip;
-- lua-cjson's encoder stops at 14 digits), inf/nan written as bare words (Roblox's encoder emits
-- them although they are not JSON), an empty table as [], a table with [1] as an array.
local function jsonString(s)
	return '"' .. s:gsub('[%c"\\]', function(c)
		local named = { ['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }
		return named[c] or string.format("\\u%04x", c:byte())
	end) .. '"'
end

local function jsonEncode(v, depth)
	if depth > 100 then
		error("JSONEncode: nesting too deep", 0)
	end
	local t = type(v)
	if v == nil or v == cjson.null then
		return "null"
	elseif t == "boolean" then
		return tostring(v)
	elseif t == "number" then
		if v ~= v then
			return "nan"
		elseif v == math.huge then
			return "inf"
		elseif v == -math.huge then
			return "-inf"
		elseif v == math.floor(v) and math.abs(v) < 1e15 then
			return string.format("%d", v)
		end
		return string.format("%.17g", v)
	elseif t == "string" then
		return jsonString(v)
	elseif t == "table" and D.typeof(v) == "table" then
		local parts = {}
		if v[1] ~= nil or next(v) == nil then
			for i = 1, #v do
				parts[i] = jsonEncode(v[i], depth + 1)
			end
			return "[" .. table.concat(parts, ",") .. "]"
		end
		local keys = {}
		for k in pairs(v) do
			if type(k) == "string" then
				table.insert(keys, k)
			end
		end
		table.sort(keys)
		for i, k in ipairs(keys) do
			parts[i] = jsonString(k) .. ":" .. jsonEncode(v[k], depth + 1)
		end
		return "{" .. table.concat(parts, ",") .. "}"
	end
	error("JSONEncode: cannot encode a " .. D.typeof(v), 0)
end

local guidCounter = 0
service("HttpService", {
	props = { HttpEnabled = false },
	methods = {
		JSONEncode = function(_, v)
			return jsonEncode(v, 0)
		end,
		JSONDecode = function(_, s)
			local ok, v = pcall(cjson.decode, s)
			if not ok then
				error("Can't parse JSON", 2)
			end
			return v
		end,
		GenerateGUID = function(_, wrap)
			guidCounter = guidCounter + 1
			local g = string.format("00000000-0000-4000-8000-%012d", guidCounter)
			if wrap == false then
				return g
			end
			return "{" .. g .. "}"
		end,
		RequestAsync = function(self, req)
			local h = state[self].requestHandler
			if not h then
				error("HttpService fake: no request handler installed (set Fake.httpHandler)", 2)
			end
			return h(req)
		end,
	},
})

---------------------------------------------------------------- ChangeHistoryService
service("ChangeHistoryService", {
	init = function(_, st)
		st.log = {} -- {op=..., name=..., id=...}
		st.counter = 0
		st.undo = {} -- committed waypoints, newest last (names)
		st.redo = {}
	end,
	methods = {
		TryBeginRecording = function(self, name, displayName)
			local st = state[self]
			if st.active then
				return nil
			end
			st.counter = st.counter + 1
			st.active = "rec" .. st.counter
			st.activeName = name
			st.changes = {}
			I.recorder = function(undo)
				table.insert(st.changes, undo)
			end
			table.insert(st.log, { op = "begin", name = name, id = st.active })
			return st.active
		end,
		FinishRecording = function(self, id, operation)
			local st = state[self]
			-- As in the engine: with Cancel the identifier is ignored.
			local cancel = operation == D.Enum.FinishRecordingOperation.Cancel
			if id ~= st.active and not (cancel and st.active) then
				error("FinishRecording: no recording with identifier " .. tostring(id), 2)
			end
			table.insert(st.log, { op = "finish", id = st.active, operation = operation })
			I.recorder = nil
			if cancel then -- the engine reverts what the recording changed
				for i = #st.changes, 1, -1 do
					st.changes[i]()
				end
			end
			st.changes = nil
			if operation == D.Enum.FinishRecordingOperation.Commit then
				table.insert(st.undo, st.activeName)
				st.redo = {}
			end
			st.active = nil
		end,
		IsRecordingInProgress = function(self)
			return state[self].active ~= nil
		end,
		SetWaypoint = function(self, name)
			table.insert(state[self].log, { op = "waypoint", name = name })
			table.insert(state[self].undo, name)
		end,
		GetCanUndo = function(self)
			local u = state[self].undo
			if #u == 0 then
				return false, ""
			end
			return true, u[#u]
		end,
		GetCanRedo = function(self)
			local r = state[self].redo
			if #r == 0 then
				return false, ""
			end
			return true, r[#r]
		end,
		-- The engine raises when there is nothing left (ChangeHistoryService.yaml).
		Undo = function(self)
			local st = state[self]
			if #st.undo == 0 then
				error("ChangeHistoryService:Undo() - nothing to undo", 2)
			end
			table.insert(st.redo, table.remove(st.undo))
			table.insert(st.log, { op = "undo" })
		end,
		Redo = function(self)
			local st = state[self]
			if #st.redo == 0 then
				error("ChangeHistoryService:Redo() - nothing to redo", 2)
			end
			table.insert(st.undo, table.remove(st.redo))
			table.insert(st.log, { op = "redo" })
		end,
	},
})

---------------------------------------------------------------- ReflectionService
-- GetPropertiesOfClass lists a class's properties with their types (I.propertiesOf), once a
-- test turns it on (state[svc].enabled); off, it raises as in a Studio without it, and the
-- plugin falls back to its fixed property lists.
service("ReflectionService", {
	methods = {
		GetPropertiesOfClass = function(self, className)
			if not state[self].enabled then
				error("GetPropertiesOfClass is not a valid member of ReflectionService", 2)
			end
			return I.propertiesOf(className)
		end,
	},
})

---------------------------------------------------------------- StudioCaptureService
-- The viewport is state[svc].width x height of RGBA8 pixels (a gradient), or the PNG bytes in
-- state[svc].png; the user grants permission when asked unless state[svc].deny; the capture
-- is Pending until the scheduler runs, then Ready (or Error with state[svc].fail). ScaleAsync
-- resamples RGBA8 by nearest neighbour (a PNG it refuses, unless state[svc].scalePng).
local function gradient(w, h)
	local px = {}
	for y = 0, h - 1 do
		for x = 0, w - 1 do
			px[#px + 1] = string.char(x % 256, y % 256, (x + y) % 256, 255)
		end
	end
	return table.concat(px)
end
def("StudioScreenshotCapture", {
	creatable = false,
	props = { Resolution = D.Vector2.new(0, 0), OriginalSize = D.Vector2.new(0, 0) },
	computed = {
		BufferStatus = { get = function(cap) return state[cap].status end },
		BufferFormat = { get = function(cap) return state[cap].format end },
	},
	methods = {
		GetBuffer = function(cap)
			return state[cap].bytes
		end,
		GetErrors = function(cap)
			return state[cap].errors or {}
		end,
		ScaleAsync = function(cap, _mode, size)
			local cs = state[cap]
			task.wait()
			if cs.format == D.Enum.StudioCaptureScreenshotFormat.PNG and not cs.scalePng then
				error("ScaleAsync: only RGBA8 captures can be scaled", 2)
			end
			local w, h = math.floor(size.X), math.floor(size.Y)
			local px = {}
			for y = 0, h - 1 do
				for x = 0, w - 1 do
					local sx, sy = math.floor(x * cs.w / w), math.floor(y * cs.h / h)
					local i = (sy * cs.w + sx) * 4
					px[#px + 1] = string.sub(cs.bytes, i + 1, i + 4)
				end
			end
			cs.bytes = table.concat(px)
			cs.w, cs.h = w, h
			cs.props.Resolution = D.Vector2.new(w, h)
		end,
	},
})
service("StudioCaptureService", {
	init = function(_, st)
		st.width, st.height = 8, 4
		st.granted = false
		st.asked = 0
	end,
	methods = {
		CanCaptureScreenshot = function(self)
			local st = state[self]
			return st.granted and not st.inactive
		end,
		RequestScreenshotPermissionAsync = function(self)
			local st = state[self]
			st.asked = st.asked + 1
			task.wait()
			st.granted = not st.deny
			return st.granted
		end,
		CaptureScreenshot = function(self, options)
			local st = state[self]
			if not st.granted then
				error("StudioCaptureService:CaptureScreenshot - no permission", 2)
			end
			local fmt = options and options.Format or D.Enum.StudioCaptureScreenshotFormat.RGBA8
			local cap = I.create("StudioScreenshotCapture")
			local cs = state[cap]
			local png = st.png and fmt == D.Enum.StudioCaptureScreenshotFormat.PNG
			cs.status = D.Enum.StudioCaptureBufferStatus.Pending
			cs.format = png and fmt or D.Enum.StudioCaptureScreenshotFormat.RGBA8
			cs.w, cs.h = st.width, st.height
			cs.bytes = png and st.png or gradient(st.width, st.height)
			cs.scalePng = st.scalePng
			cs.props.Resolution = D.Vector2.new(st.width, st.height)
			cs.props.OriginalSize = cs.props.Resolution
			task.delay(0, function()
				cs.status = st.fail and D.Enum.StudioCaptureBufferStatus.Error
					or D.Enum.StudioCaptureBufferStatus.Ready
				cs.errors = st.fail and { st.fail } or {}
			end)
			return cap
		end,
	},
})

---------------------------------------------------------------- ScriptEditorService
-- A script may carry an editor draft (state[script].editorSource) that differs from .Source, as
-- in Studio's drafts / collaborative editing; GetEditorSource returns the draft.
service("ScriptEditorService", {
	methods = {
		GetEditorSource = function(_, script)
			if script == nil or not script:IsA("LuaSourceContainer") then
				error("GetEditorSource expects a LuaSourceContainer", 2)
			end
			local st = state[script]
			if st.editorSource ~= nil then
				return st.editorSource
			end
			return st.props.Source
		end,
		UpdateSourceAsync = function(self, script, callback)
			if script == nil or not script:IsA("LuaSourceContainer") then
				error("UpdateSourceAsync expects a LuaSourceContainer", 2)
			end
			local sst = state[self]
			if sst.rejectNext then
				sst.rejectNext = nil
				error("UpdateSourceAsync: the editor rejected the update", 2)
			end
			local st = state[script]
			local old = st.editorSource
			if old == nil then
				old = st.props.Source
			end
			local new = callback(old)
			if new == nil then
				return
			end
			if type(new) ~= "string" then
				error("UpdateSourceAsync: callback must return a string", 2)
			end
			-- The editor keeps "\n" line endings (a "\r\n" text reads back without the "\r").
			new = new:gsub("\r\n", "\n")
			st.props.Source = new
			st.editorSource = nil
			sst.updates = (sst.updates or 0) + 1
		end,
		FindScriptDocument = function(_, script)
			local st = state[script]
			if st.editorSource == nil then
				return nil
			end
			return { GetText = function() return st.editorSource end }
		end,
	},
})

---------------------------------------------------------------- LogService
service("LogService", {
	init = function(inst, st)
		st.history = {}
		st.messageOut = L.signal()
	end,
	computed = {
		MessageOut = { get = function(inst) return state[inst].messageOut end },
	},
	methods = {
		GetLogHistory = function(self)
			local out = {}
			for i, e in ipairs(state[self].history) do
				out[i] = e
			end
			return out
		end,
		-- fake only: what print/warn/error output does in Studio
		_emit = function(self, message, messageType)
			local st = state[self]
			table.insert(st.history, { message = message, messageType = messageType, timestamp = L.now() })
			st.messageOut:Fire(message, messageType)
		end,
	},
})

---------------------------------------------------------------- Selection
service("Selection", {
	init = function(_, st)
		st.selected = {}
	end,
	methods = {
		Get = function(self)
			local out = {}
			for i, v in ipairs(state[self].selected) do
				out[i] = v
			end
			return out
		end,
		Set = function(self, list)
			state[self].selected = {}
			for i, v in ipairs(list) do
				state[self].selected[i] = v
			end
		end,
	},
})

---------------------------------------------------------------- CollectionService
service("CollectionService", {
	methods = {
		AddTag = function(_, inst, tag) inst:AddTag(tag) end,
		RemoveTag = function(_, inst, tag) inst:RemoveTag(tag) end,
		HasTag = function(_, inst, tag) return inst:HasTag(tag) end,
		GetTags = function(_, inst) return inst:GetTags() end,
		GetTagged = function(self, tag)
			local root = state[self].parent
			local out = {}
			for _, d in ipairs(I.descendants(root)) do
				if state[d].tags[tag] then
					table.insert(out, d)
				end
			end
			return out
		end,
		GetAllTags = function(self)
			local root = state[self].parent
			local seen, out = {}, {}
			for _, d in ipairs(I.descendants(root)) do
				for _, t in ipairs(state[d].tagOrder) do
					if not seen[t] then
						seen[t] = true
						table.insert(out, t)
					end
				end
			end
			return out
		end,
	},
})

---------------------------------------------------------------- RunService
-- state.mode: "edit" | "run" (F8, same DataModel) | "play_server" | "play_client", and a paused
-- test: "paused_server" | "paused_client", where (as in the engine) IsEdit and IsRunning are both
-- false (RunService.yaml).
service("RunService", {
	init = function(_, st)
		st.mode = "edit"
	end,
	methods = {
		IsStudio = function() return true end,
		IsEdit = function(self) return state[self].mode == "edit" end,
		IsRunning = function(self)
			local m = state[self].mode
			return m ~= "edit" and m ~= "paused_server" and m ~= "paused_client"
		end,
		IsRunMode = function(self) return state[self].mode == "run" end,
		IsServer = function(self)
			local m = state[self].mode
			return m == "edit" or m == "run" or m == "play_server" or m == "paused_server"
		end,
		IsClient = function(self)
			local m = state[self].mode
			return m == "edit" or m == "run" or m == "play_client" or m == "paused_client"
		end,
		Stop = function(self)
			local st = state[self]
			st.stops = (st.stops or 0) + 1
			if st.mode == "run" then
				st.mode = "edit"
			end
		end,
		Run = function(self) state[self].mode = "run" end,
		Pause = function() end,
	},
})

---------------------------------------------------------------- StudioTestService
-- Execute*Async starts a session as the engine does: the place is COPIED into a new DataModel
-- (the test server's), whose RunService is in play/run mode; the enabled Scripts under its
-- ServerScriptService run there (their Source, under loadstring, with that DataModel as game),
-- and the call yields until EndTest. EndTest is asynchronous: it returns at once and the session
-- ends a moment later (a task.defer), also for a test the user started by hand
-- (StudioTestService:_startManual). Fake knobs: state.failNow (raise before yielding),
-- state.failAfterYield (raise after the first yield, like "Previous call to start play session
-- has not been completed").
local SERVICES_COPIED = { "Workspace", "ReplicatedStorage", "ReplicatedFirst", "ServerScriptService",
	"ServerStorage", "StarterGui", "StarterPack", "StarterPlayer", "Lighting", "Teams", "SoundService" }

local function copyPlace(game, mode)
	local test = I.create("DataModel")
	local gst, tst = state[game], state[test]
	for k, v in pairs(gst.props) do
		tst.props[k] = v
	end
	for _, name in ipairs(SERVICES_COPIED) do
		local src = game:FindService(name)
		if src then
			local dst = test:GetService(name)
			for _, c in ipairs(src:GetChildren()) do
				local cc = c:Clone()
				if cc then
					cc.Parent = dst
				end
			end
		end
	end
	state[test:GetService("RunService")].mode = mode
	return test
end

local function runServerScripts(test)
	local sss = test:GetService("ServerScriptService")
	local logSvc = test:GetService("LogService")
	local editLog = state[test].editLog
	local function emit(message, kind)
		logSvc:_emit(message, kind)
		if editLog then
			editLog:_emit(message, kind) -- Studio's Output shows both
		end
	end
	for _, s in ipairs(sss:GetDescendants()) do
		if s.ClassName == "Script" and s.Enabled then
			local fn, err = loadstring(s.Source, "=" .. s:GetFullName())
			if not fn then
				emit(tostring(err), D.Enum.MessageType.MessageError)
			else
				local function out(kind)
					return function(...)
						local parts = {}
						for i = 1, select("#", ...) do
							parts[i] = tostring((select(i, ...)))
						end
						emit(table.concat(parts, " "), kind)
					end
				end
				local env = setmetatable({
					script = s,
					game = test,
					workspace = test:GetService("Workspace"),
					print = out(D.Enum.MessageType.MessageOutput),
					warn = out(D.Enum.MessageType.MessageWarning),
				}, { __index = _G })
				setfenv(fn, env)
				L.task.spawn(fn)
			end
		end
	end
end

local function execute(self, mode, args)
	local st = state[self]
	if st.failNow then
		local msg = st.failNow
		st.failNow = nil
		error(msg, 2)
	end
	if st.session then
		error("A test session is already running", 2)
	end
	if st.failAfterYield then
		local msg = st.failAfterYield
		st.failAfterYield = nil
		L.task.wait(0.05)
		error(msg, 2)
	end
	local session = { mode = mode, args = args, owner = self }
	st.session = session
	st.sessions = (st.sessions or 0) + 1
	local game = st.parent
	local test = copyPlace(game, mode == "run" and "run" or "play_server")
	state[test].editLog = game:GetService("LogService")
	session.game = test
	state[test:GetService("StudioTestService")].session = session
	runServerScripts(test)
	if L.canPark() then
		while not session.done do
			L.park(session)
		end
	else
		L.runUntilIdle(3600, function() return session.done end)
	end
	st.session = nil
	if not session.done then
		error("fake StudioTestService: the test session never ended (no EndTest)", 2)
	end
	return session.value
end

service("StudioTestService", {
	methods = {
		ExecutePlayModeAsync = function(self, args) return execute(self, "play", args) end,
		ExecuteRunModeAsync = function(self, args) return execute(self, "run", args) end,
		EndTest = function(self, value)
			local session = state[self].session
			if not session then
				error("EndTest: no test session is running", 2)
			end
			-- Returns at once; the session ends a moment later.
			L.task.defer(function()
				if session.done then
					return
				end
				session.done = true
				session.value = value
				if session.manual then
					state[session.owner].session = nil
				end
				L.wake(session)
			end)
		end,
		GetTestArgs = function(self)
			local session = state[self].session
			return session and session.args
		end,
		_isRunning = function(self) return state[self].session ~= nil end,
		-- fake only: the user pressed Play; returns the test server's DataModel
		_startManual = function(self)
			local st = state[self]
			local session = { mode = "play", manual = true, owner = self }
			st.session = session
			session.game = copyPlace(st.parent, "play_server")
			state[session.game:GetService("StudioTestService")].session = session
			return session.game
		end,
	},
})

---------------------------------------------------------------- InsertService
-- LoadAsset(id) gives a Model holding one Part named "Asset<id>"; ids listed in state.denied
-- fail like an asset the user may not use.
service("InsertService", {
	init = function(_, st)
		st.denied = {}
		st.catalog = {
			{ AssetId = 1001, Name = "Red Car", CreatorName = "Builder" },
			{ AssetId = 1002, Name = "Tree", CreatorName = "Nature" },
		}
	end,
	methods = {
		LoadAsset = function(self, id)
			if type(id) ~= "number" then
				error("LoadAsset: asset id must be a number", 2)
			end
			if state[self].denied[id] then
				error("HTTP 403 (Forbidden)", 2)
			end
			local m = I.create("Model")
			local p = I.create("Part")
			p.Name = "Asset" .. id
			p.Parent = m
			return m
		end,
		GetFreeModels = function(self, query, page)
			local results = {}
			for _, e in ipairs(state[self].catalog) do
				if e.Name:lower():find(query:lower(), 1, true) then
					table.insert(results, e)
				end
			end
			return { { CurrentStartIndex = (page or 0) * 20, TotalCount = #results, Results = results } }
		end,
	},
})

---------------------------------------------------------------- DataModel
def("DataModel", {
	creatable = false,
	props = { PlaceId = 0, GameId = 0, CreatorId = 0, PlaceVersion = 1, JobId = "" },
	methods = {
		GetService = function(self, name)
			for _, c in ipairs(state[self].children) do
				if state[c].className == name then
					return c
				end
			end
			local cls = I.classes[name]
			if not cls or not cls.service then
				error("'" .. tostring(name) .. "' is not a valid Service name", 2)
			end
			local s = I.create(name)
			state[s].props.Name = name
			s.Parent = self
			return s
		end,
		-- plugin-only: loads an asset as a list of instances; ids in state.objectsDenied fail
		GetObjects = function(self, url)
			local id = tonumber(tostring(url):match("^rbxassetid://(%d+)$"))
			local st = state[self]
			if not id or (st.objectsDenied and st.objectsDenied[id]) then
				error("HTTP 403 (Forbidden)", 2)
			end
			local p = I.create("Part")
			p.Name = "Object" .. id
			return { p }
		end,
		FindService = function(self, name)
			for _, c in ipairs(state[self].children) do
				if state[c].className == name then
					return c
				end
			end
			return nil
		end,
	},
})

return true

-- Globals.lua - the environment that code run by the plugin sees (execute_luau,
-- run_script_in_play_mode in a running server, set_calculated_property's expressions).
--
-- Built from a table of the Roblox globals, read by name once when this module loads, instead
-- of getfenv 0: calling getfenv or setfenv on the plugin's own functions switches off Luau's
-- optimisations for the whole plugin (every bundled module shares one script environment). Only
-- the loaded user chunk gets setfenv, which deoptimises that chunk alone (LuaGlobals.yaml).
-- A global this Studio lacks is simply absent.

local Globals = {}

local BASE = {
	-- Luau
	assert = assert, error = error, getmetatable = getmetatable, ipairs = ipairs, next = next,
	pairs = pairs, pcall = pcall, print = print, rawequal = rawequal, rawget = rawget, rawlen = rawlen,
	rawset = rawset, select = select, setmetatable = setmetatable, tonumber = tonumber,
	tostring = tostring, type = type, unpack = unpack, xpcall = xpcall, newproxy = newproxy,
	loadstring = loadstring, getfenv = getfenv, setfenv = setfenv, gcinfo = gcinfo,
	bit32 = bit32, buffer = buffer, coroutine = coroutine, debug = debug, math = math, os = os,
	string = string, table = table, utf8 = utf8,
	-- Roblox
	game = game, workspace = workspace, plugin = plugin, shared = shared, _G = _G, script = nil,
	typeof = typeof, warn = warn, require = require, tick = tick, time = time, elapsedTime = elapsedTime,
	settings = settings, UserSettings = UserSettings, version = version, task = task, wait = wait,
	spawn = spawn, delay = delay, Enum = Enum, Instance = Instance,
	Axes = Axes, BrickColor = BrickColor, CFrame = CFrame, CatalogSearchParams = CatalogSearchParams,
	Color3 = Color3, ColorSequence = ColorSequence, ColorSequenceKeypoint = ColorSequenceKeypoint,
	Content = Content, DateTime = DateTime, DockWidgetPluginGuiInfo = DockWidgetPluginGuiInfo,
	Faces = Faces, FloatCurveKey = FloatCurveKey, Font = Font, NumberRange = NumberRange,
	NumberSequence = NumberSequence, NumberSequenceKeypoint = NumberSequenceKeypoint,
	OverlapParams = OverlapParams, Path2DControlPoint = Path2DControlPoint,
	PathWaypoint = PathWaypoint, PhysicalProperties = PhysicalProperties, Random = Random,
	Ray = Ray, RaycastParams = RaycastParams, Rect = Rect, Region3 = Region3,
	Region3int16 = Region3int16, RotationCurveKey = RotationCurveKey, SharedTable = SharedTable,
	TweenInfo = TweenInfo, UDim = UDim, UDim2 = UDim2, Vector2 = Vector2,
	Vector2int16 = Vector2int16, Vector3 = Vector3, Vector3int16 = Vector3int16, vector = vector,
}

-- A fresh environment table: the globals above, then fields (overrides such as print,
-- game, workspace). base (optional) replaces the globals (tests pass their own).
function Globals.env(fields, base)
	local env = {}
	for k, v in pairs(base or BASE) do
		env[k] = v
	end
	for k, v in pairs(fields or {}) do
		env[k] = v
	end
	return env
end

return Globals

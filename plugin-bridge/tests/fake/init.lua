-- tests/fake/init.lua - the fake Roblox environment for lua5.1 tests.
--
--   local Fake = require("fake")        -- with plugin-bridge/tests on package.path (runner.lua)
--   Fake.install()                       -- globals: Vector3 ... Enum, typeof, Instance, task, warn
--   local place = Fake.newPlace()        -- a fresh fixture DataModel (see below)
--   place.game, place.ctx                -- ctx = {game, services, plugin} for tool handlers
--   Fake.load("Tools")                   -- loads plugin-bridge/src/Tools.lua the Roblox way
--
-- Modules under plugin-bridge/src are loaded with their own `script` (a node of the source tree)
-- so `require(script.Parent.Values)` works as it does in Studio / Rojo / the bundle.

local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. package.path

local D = require("datatypes")
local I = require("instance")
local L = require("luau")
require("world")

local Fake = {}
Fake.D, Fake.I, Fake.L = D, I, L
Fake.state = I.state
Fake.srcDir = here .. "/../../src"

local installed = false
function Fake.install()
	if installed then
		return
	end
	installed = true
	for _, n in ipairs({ "Vector3", "Vector2", "Color3", "CFrame", "UDim", "UDim2", "BrickColor", "NumberRange",
		"NumberSequence", "NumberSequenceKeypoint", "ColorSequence", "ColorSequenceKeypoint", "Rect", "Enum",
		"Font", "PhysicalProperties", "Faces", "Axes", "Vector3int16", "Vector2int16", "Content", "Region3",
		"Region3int16", "Ray" }) do
		_G[n] = D[n]
	end
	_G.typeof = D.typeof
	_G.Instance = { new = I.new }
	_G.task = L.task
	_G.pcall = L.ypcall
	_G.tick = function() return L.now() end
	_G.warn = function(...)
		if _G.game then
			local parts = {}
			for i = 1, select("#", ...) do
				parts[i] = tostring((select(i, ...)))
			end
			_G.game:GetService("LogService"):_emit(table.concat(parts, " "), D.Enum.MessageType.MessageWarning)
		end
	end
end

local function part(name, parent, props)
	local p = I.new("Part")
	p.Name = name
	for k, v in pairs(props or {}) do
		p[k] = v
	end
	p.Parent = parent
	return p
end

local function make(className, name, parent, props)
	local o = I.new(className)
	o.Name = name
	for k, v in pairs(props or {}) do
		o[k] = v
	end
	o.Parent = parent
	return o
end
Fake.make = make

-- The fixture place:
--   Workspace: Camera, Terrain, Baseplate, Model{Part{Sparks (ParticleEmitter)}, Handle},
--              "a.b" (Folder){Inner}, Lava (tag "Lava", attributes Damage=10, Label="hot"),
--              Link (ObjectValue -> Model.Part), Weld (WeldConstraint)
--   ServerScriptService: MainScript (Script, 3 lines), Util (ModuleScript)
--   ReplicatedStorage: Shared (ModuleScript), Assets{Crate}
--   StarterGui: HUD{Panel{Title, Icon, Padding}}
--   Lighting, ServerStorage, Players, StarterPlayer, StarterPack, Teams, SoundService
function Fake.newPlace()
	Fake.install()
	L.reset()
	local game = I.create("DataModel")
	I.state[game].props.Name = "TestPlace"
	I.state[game].props.PlaceId = 12345
	I.state[game].props.GameId = 678
	I.state[game].props.CreatorId = 42
	for _, s in ipairs({ "Workspace", "Players", "Lighting", "ReplicatedFirst", "ReplicatedStorage",
		"ServerScriptService", "ServerStorage", "StarterGui", "StarterPack", "StarterPlayer", "Teams",
		"SoundService", "Chat" }) do
		game:GetService(s)
	end
	_G.game = game
	_G.workspace = game.Workspace
	local ws = game.Workspace
	local cam = make("Camera", "Camera", ws)
	ws.CurrentCamera = cam
	local terrain = I.create("Terrain")
	terrain.Name = "Terrain"
	terrain.Anchored = true
	terrain.Parent = ws
	part("Baseplate", ws, { Anchored = true, Size = D.Vector3.new(512, 20, 512), CFrame = D.CFrame.new(0, -10, 0) })
	local model = make("Model", "Model", ws)
	local p = part("Part", model, { CFrame = D.CFrame.new(0, 5, 0), Anchored = true })
	make("ParticleEmitter", "Sparks", p)
	part("Handle", model, { CFrame = D.CFrame.new(2, 5, 0) })
	model.PrimaryPart = p
	local dotted = make("Folder", "a.b", ws)
	part("Inner", dotted)
	local lava = part("Lava", ws, { Material = D.Enum.Material.Neon, Color = D.Color3.new(1, 0.2, 0) })
	lava:AddTag("Lava")
	lava:SetAttribute("Damage", 10)
	lava:SetAttribute("Label", "hot")
	make("ObjectValue", "Link", ws, { Value = p })
	make("WeldConstraint", "Weld", ws, { Part0 = p })
	local sss = game.ServerScriptService
	make("Script", "MainScript", sss, { Source = "print(\"hello\")\nlocal x = 1\nreturn x" })
	make("ModuleScript", "Util", sss, { Source = "local M = {}\nreturn M" })
	local rs = game.ReplicatedStorage
	make("ModuleScript", "Shared", rs, { Source = "return {}" })
	local assets = make("Folder", "Assets", rs)
	part("Crate", assets)
	local hud = make("ScreenGui", "HUD", game.StarterGui)
	local panel = make("Frame", "Panel", hud, { Size = D.UDim2.new(0.5, 0, 0.25, 10) })
	make("TextLabel", "Title", panel, { Text = "Score" })
	make("ImageLabel", "Icon", panel, { SliceCenter = D.Rect.new(1, 2, 3, 4) })
	make("UIPadding", "Padding", panel, { PaddingLeft = D.UDim.new(0, 8) })
	-- Studio and plugin internals: a locked CoreGui script and another plugin's widget script
	local locked = I.create("LockedScript")
	locked.Parent = game:GetService("CoreGui")
	local widget = make("Folder", "OtherPluginWidget", game:GetService("PluginGuiService"))
	make("Script", "OtherPluginScript", widget, { Source = "print(\"hello from another plugin\")" })
	-- the non-tree services the plugin uses (created like GetService does in Studio)
	for _, s in ipairs({ "HttpService", "ChangeHistoryService", "ScriptEditorService", "LogService", "Selection",
		"CollectionService", "StudioTestService", "RunService", "InsertService" }) do
		game:GetService(s)
	end
	local settings = {}
	local plugin = {
		-- getFails: how many of the next GetSetting calls raise (several Studio windows share
		-- the settings file, and the engine may fail to read it: Plugin.yaml)
		GetSetting = function(self, k)
			if (self.getFails or 0) > 0 then
				self.getFails = self.getFails - 1
				error("GetSetting: the plugin settings could not be read (another Studio window is writing them)", 2)
			end
			return settings[k]
		end,
		SetSetting = function(_, k, v) settings[k] = v end,
		_settings = settings,
	}
	local ctx = {
		game = game,
		services = setmetatable({}, { __index = function(_, n) return game:GetService(n) end }),
		plugin = plugin,
	}
	return { game = game, ctx = ctx, plugin = plugin, state = I.state }
end

-- Adds n instances to place's Workspace (folders of 100 parts, every 50th a Script whose source
-- mentions "needle"): a large place, as real ones are (gap 8).
function Fake.bigPlace(place, n)
	local ws = place.game.Workspace
	local folder
	for i = 1, n do
		if i % 100 == 1 then
			folder = I.create("Folder")
			I.state[folder].props.Name = "Block" .. i
			folder.Parent = ws
		elseif i % 50 == 0 then
			local s = I.create("Script")
			I.state[s].props.Name = "S" .. i
			I.state[s].props.Source = "-- needle " .. i
			s.Parent = folder
		else
			local p = I.create("Part")
			I.state[p].props.Name = "P" .. i
			p.Parent = folder
		end
	end
end

-- A fresh place, fresh plugin modules and run(name, args) calling the tool handler with the
-- place's ctx (execute_luau's print goes nowhere instead of the terminal).
function Fake.setup()
	Fake.resetModules()
	local place = Fake.newPlace()
	place.ctx.env = setmetatable({ print = function() end }, { __index = _G })
	local Tools = Fake.load("Tools")
	local function run(name, args)
		local h = Tools.get(name)
		if not h then
			error("no handler for " .. tostring(name), 2)
		end
		return h.run(args or {}, place.ctx)
	end
	return place, run, Tools
end

---------------------------------------------------------------- module loader
-- A node stands for a file or folder under src; indexing a node gives the child node, and
-- .Parent the folder above, like Instances in a Rojo-built plugin.
local cache = {}
local NodeMt = {}
local function node(path)
	return setmetatable({ _path = path }, NodeMt)
end
NodeMt.__index = function(self, key)
	local path = rawget(self, "_path")
	if key == "Parent" then
		return node(path:match("^(.*)/[^/]*$") or ".")
	end
	return node(path .. "/" .. key)
end

local function loadNode(n)
	local path = rawget(n, "_path")
	if cache[path] ~= nil then
		return cache[path]
	end
	local chunk, err = loadfile(path .. ".lua")
	if not chunk then
		chunk, err = loadfile(path .. "/init.lua")
	end
	if not chunk then
		error("fake require: cannot load " .. path .. ": " .. tostring(err), 2)
	end
	local env = setmetatable({ script = n }, { __index = _G })
	env.require = function(target)
		if getmetatable(target) == NodeMt then
			return loadNode(target)
		end
		return require(target)
	end
	setfenv(chunk, env)
	local result = chunk()
	cache[path] = result
	return result
end

-- Forgets loaded modules, so the next load starts from fresh module state.
function Fake.resetModules()
	cache = {}
end

-- Loads plugin-bridge/src/<relative> ("Tools", "Values", "tools/Scripts").
function Fake.load(relative)
	Fake.install()
	return loadNode(node(Fake.srcDir .. "/" .. relative))
end

-- The script node of a source file, for modules that want to require their siblings.
function Fake.node(relative)
	return node(Fake.srcDir .. "/" .. relative)
end

return Fake

-- test_fake.lua - the fake Roblox environment behaves like Roblox where the plugin relies on it:
-- datatypes, typeof, Instance semantics and errors, services, the deterministic task library.

local Fake = require("fake")

test("datatypes: fields, arithmetic, equality, immutability", function()
	Fake.install()
	local v = Vector3.new(1, 2, 3) + Vector3.new(1, 1, 1) * 2
	eq(v, Vector3.new(3, 4, 5))
	eq(v.Magnitude, math.sqrt(50))
	eq(typeof(v), "Vector3")
	raises(function() return v.W end, "W is not a valid member of Vector3")
	raises(function() v.X = 1 end, "immutable")
	eq(UDim2.new(1, 2, 3, 4).Y.Offset, 4)
	eq(Color3.fromRGB(255, 0, 0), Color3.new(1, 0, 0))
	eq(BrickColor.new("Bright red").Number, 21)
	eq(BrickColor.new("nonsense").Name, "Medium stone grey", "unknown names fall back like Roblox")
	eq(Rect.new(Vector2.new(1, 2), Vector2.new(3, 4)), Rect.new(1, 2, 3, 4))
	raises(function() NumberSequence.new({ NumberSequenceKeypoint.new(0.5, 1) }) end, "at least 2")
	eq(tostring(Enum.Material.Grass), "Enum.Material.Grass")
	eq(typeof(Enum.Material.Grass), "EnumItem")
	eq(Enum.Material.Grass.EnumType, Enum.Material)
	raises(function() return Enum.Material.Lava end, "Lava is not a valid member")
end)

test("CFrame: components, composition, inverse, point transform", function()
	Fake.install()
	local cf = CFrame.new(1, 2, 3) * CFrame.Angles(0, math.pi / 2, 0)
	local c = { cf:GetComponents() }
	eq(#c, 12)
	eq(c[1], 1)
	local p = cf * Vector3.new(1, 0, 0)
	truthy(math.abs(p.X - 1) < 1e-12 and math.abs(p.Z - 2) < 1e-12, "rotated point " .. tostring(p))
	local id = cf:Inverse() * cf
	for k, x in ipairs({ id:GetComponents() }) do
		local want = ({ 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1 })[k]
		truthy(math.abs(x - want) < 1e-12, "identity component " .. k)
	end
	eq(CFrame.new(Vector3.new(4, 5, 6)).Position, Vector3.new(4, 5, 6))
end)

test("instances: tree, names, errors like Roblox", function()
	local place = Fake.newPlace()
	local g = place.game
	local part = g.Workspace.Model.Part
	eq(part:GetFullName(), "Workspace.Model.Part")
	eq(part.Parent, g.Workspace.Model)
	truthy(part:IsA("BasePart") and part:IsA("Instance") and not part:IsA("Model"), "IsA")
	eq(g.Workspace:FindFirstChild("Sparks", true).ClassName, "ParticleEmitter")
	raises(function() return part.Nope end, "Nope is not a valid member of Part \"Workspace.Model.Part\"")
	raises(function() part.Size = "x" end, "Unable to assign property Size. Vector3 expected, got string")
	raises(function() part.Parent = part.Sparks end, "own parent")
	raises(function() Instance.new("Bogus") end, "Unable to create an Instance of type \"Bogus\"")
	local copy = g.Workspace.Model:Clone()
	eq(copy.Parent, nil)
	eq(copy.Part.Sparks.ClassName, "ParticleEmitter")
	part:Destroy()
	eq(g.Workspace.Model:FindFirstChild("Part"), nil)
	raises(function() part.Parent = g.Workspace end, "locked")
	part = g.Workspace.Model.Handle
	part.Position = Vector3.new(7, 8, 9)
	eq(part.CFrame.Position, Vector3.new(7, 8, 9), "Position moves the CFrame")
end)

test("attributes and tags", function()
	local place = Fake.newPlace()
	local lava = place.game.Workspace.Lava
	raises(function() lava:SetAttribute("Bad", place.game.Workspace) end, "not a supported attribute type")
	lava:SetAttribute("Damage", nil)
	eq(lava:GetAttribute("Damage"), nil)
	same(place.game.CollectionService:GetTagged("Lava"), { lava })
end)

test("services: GetService, JSON, history, selection", function()
	local place = Fake.newPlace()
	local g = place.game
	eq(g:GetService("Workspace"), g.Workspace)
	raises(function() g:GetService("Nope") end, "not a valid Service name")
	local http = g:GetService("HttpService")
	eq(http:JSONEncode({ a = { 1, 2 }, b = {} }), "{\"a\":[1,2],\"b\":[]}")
	same(http:JSONDecode("{\"x\":[1,true]}"), { x = { 1, true } })
	raises(function() http:JSONDecode("{") end, "Can't parse JSON")
	truthy(http:GenerateGUID(false) ~= http:GenerateGUID(false), "distinct GUIDs")
	local chs = g:GetService("ChangeHistoryService")
	local id = chs:TryBeginRecording("x")
	truthy(id, "recording id")
	eq(chs:TryBeginRecording("y"), nil, "one recording at a time")
	chs:FinishRecording(id, Enum.FinishRecordingOperation.Commit)
	raises(function() chs:FinishRecording(id, Enum.FinishRecordingOperation.Commit) end, "no recording")
end)

-- Gap: the engine's Cancel reverts what the recording changed (ChangeHistoryService.yaml); a
-- fake that kept the changes could hide a tool that relies on it.
test("ChangeHistoryService: Cancel reverts the recording's changes, Commit and Append keep them", function()
	local place = Fake.newPlace()
	local g = place.game
	local chs = g:GetService("ChangeHistoryService")
	local lava = g.Workspace.Lava
	local before = { t = lava.Transparency, parent = lava.Parent, n = #g.Workspace:GetChildren() }
	local id = chs:TryBeginRecording("x")
	lava.Transparency = 0.75
	lava.Parent = g.ReplicatedStorage
	lava:SetAttribute("Heat", 9)
	lava:AddTag("Hot")
	local p = Instance.new("Part")
	p.Name = "New"
	p.Parent = g.Workspace
	chs:FinishRecording(id, Enum.FinishRecordingOperation.Cancel)
	eq(lava.Transparency, before.t)
	eq(lava.Parent, before.parent)
	eq(lava:GetAttribute("Heat"), nil)
	eq(lava:HasTag("Hot"), false)
	eq(g.Workspace:FindFirstChild("New"), nil)
	eq(#g.Workspace:GetChildren(), before.n)
	for _, op in ipairs({ "Commit", "Append" }) do
		id = chs:TryBeginRecording("y")
		lava.Transparency = 0.5
		chs:FinishRecording(id, Enum.FinishRecordingOperation[op])
		eq(lava.Transparency, 0.5, op .. " keeps the change")
		lava.Transparency = before.t
	end
	lava.Transparency = 0.25 -- outside a recording: nothing is recorded, nothing reverted
	eq(lava.Transparency, 0.25)
end)

-- Gap: GetSetting and SetSetting may fail while several Studio windows use the settings
-- (Plugin.yaml); the fake's plugin fails as many times as a test asks.
test("plugin settings can fail, as in Studio", function()
	local place = Fake.newPlace()
	place.plugin:SetSetting("k", 1)
	place.plugin.getFails = 2
	raises(function() place.plugin:GetSetting("k") end, "settings")
	raises(function() place.plugin:GetSetting("k") end, "settings")
	eq(place.plugin:GetSetting("k"), 1)
end)

test("task: spawn runs at once, wait and delay follow the virtual clock", function()
	Fake.newPlace()
	local L = Fake.L
	local order = {}
	task.spawn(function()
		table.insert(order, "a")
		task.wait(2)
		table.insert(order, "c")
	end)
	task.delay(1, function() table.insert(order, "b") end)
	table.insert(order, "main")
	L.advance(1.5)
	same(order, { "a", "main", "b" })
	L.advance(1)
	same(order, { "a", "main", "b", "c" })
	eq(L.now(), 2.5)
end)

test("pcall lets the protected function yield, as Luau's does", function()
	Fake.newPlace()
	local got
	task.spawn(function()
		got = { pcall(function()
			task.wait(1)
			error("late", 0)
		end) }
	end)
	eq(got, nil)
	Fake.L.advance(1)
	same(got, { false, "late" })
	eq(#Fake.L.errors, 0)
end)

test("pcall inside a task takes C functions and non-functions too", function()
	Fake.newPlace()
	local r1, r2
	task.spawn(function()
		r1 = { pcall(tostring, 5) }
		r2 = { pcall(nil) }
	end)
	same(r1, { true, "5" })
	eq(r2[1], false)
end)

test("luau library extras", function()
	Fake.install()
	same(string.split("a,b,,c", ","), { "a", "b", "", "c" })
	same(string.split("a.b", "."), { "a", "b" })
	eq(table.find({ "x", "y" }, "y"), 2)
	eq(math.clamp(5, 1, 3), 3)
	eq(math.round(2.5), 3)
	eq(math.round(-2.5), -3)
	local t = { 1, 2, a = 3 }
	table.clear(t)
	eq(next(t), nil)
end)

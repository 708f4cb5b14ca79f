-- test_values.lua - the tagged value encoding (Values.lua) both ways, for every type of
-- DESIGN §5; CFrame round-trips exactly; wrong types are refused naming the expected type.

local Fake = require("fake")
local place = Fake.newPlace()
local Values = Fake.load("Values")
local game = place.game

local function roundTrip(v)
	local j = Values.encode(v)
	return Values.decode(j, nil, game), j
end

test("every datatype survives encode -> decode", function()
	local samples = {
		Vector3.new(1.5, -2, 3e10),
		Vector2.new(0.25, -7),
		Color3.new(0, 0.5, 1),
		UDim.new(0.5, -10),
		UDim2.new(0.1, 2, 0.3, -4),
		BrickColor.new("Bright red"),
		NumberRange.new(2, 5),
		NumberSequence.new({ NumberSequenceKeypoint.new(0, 1, 0.5), NumberSequenceKeypoint.new(0.4, 3, 0),
			NumberSequenceKeypoint.new(1, 0, 0) }),
		ColorSequence.new({ ColorSequenceKeypoint.new(0, Color3.new(1, 0, 0)),
			ColorSequenceKeypoint.new(1, Color3.new(0, 0, 1)) }),
		Rect.new(1, 2, 30, 40),
		Enum.Material.Grass,
		CFrame.new(1, 2, 3),
	}
	for _, v in ipairs(samples) do
		local back, j = roundTrip(v)
		eq(typeof(back), typeof(v), "type of " .. typeof(v))
		truthy(back == v, typeof(v) .. " " .. tostring(v) .. " came back as " .. tostring(back))
		eq(j.type, typeof(v) == "EnumItem" and "Enum" or typeof(v))
	end
end)

test("encoded shapes are the documented ones", function()
	same(Values.encode(Vector3.new(1, 2, 3)), { type = "Vector3", value = { 1, 2, 3 } })
	same(Values.encode(Color3.new(1, 0, 0.5)), { type = "Color3", value = { 1, 0, 0.5 } })
	same(Values.encode(UDim2.new(1, 2, 3, 4)), { type = "UDim2", value = { 1, 2, 3, 4 } })
	same(Values.encode(BrickColor.new("Black")), { type = "BrickColor", value = "Black" })
	same(Values.encode(Enum.Material.Neon), { type = "Enum", value = "Enum.Material.Neon" })
	same(Values.encode(NumberRange.new(1, 2)), { type = "NumberRange", value = { 1, 2 } })
	same(Values.encode(Rect.new(1, 2, 3, 4)), { type = "Rect", value = { 1, 2, 3, 4 } })
	same(Values.encode(CFrame.new(1, 2, 3)), { type = "CFrame", value = { 1, 2, 3, 1, 0, 0, 0, 1, 0, 0, 0, 1 } })
	same(Values.encode(game.Workspace.Model.Part), { type = "Instance", value = "Workspace.Model.Part" })
	same(Values.encode(game.Workspace["a.b"].Inner), { type = "Instance", value = "Workspace[\"a.b\"].Inner" })
	eq(Values.encode("text"), "text")
	eq(Values.encode(3.5), 3.5)
	eq(Values.encode(false), false)
end)

test("CFrame with rotation round-trips exactly, all 12 components", function()
	local angles = { { 0.1, 0.2, 0.3 }, { math.pi / 2, 0, 0 }, { 1.234567, -2.5, 0.0001 }, { 0, math.pi, -math.pi / 3 } }
	for _, a in ipairs(angles) do
		local cf = CFrame.new(10.125, -3.3333333333333, 1e-7) * CFrame.Angles(a[1], a[2], a[3])
		local back, j = roundTrip(cf)
		eq(#j.value, 12)
		local c1 = { cf:GetComponents() }
		local c2 = { back:GetComponents() }
		for k = 1, 12 do
			eq(c2[k], c1[k], "component " .. k)
		end
		-- and through JSON text, as it travels to the daemon and back
		local http = game:GetService("HttpService")
		local viaJson = Values.decode(http:JSONDecode(http:JSONEncode(j)), nil, game)
		truthy(viaJson == cf, "CFrame via JSON text")
	end
end)

test("CFrame accepts [x,y,z] as a position without rotation", function()
	eq(Values.decode({ type = "CFrame", value = { 1, 2, 3 } }), CFrame.new(1, 2, 3))
end)

test("Instance values resolve paths both ways", function()
	local part = game.Workspace.Model.Part
	eq(Values.decode({ type = "Instance", value = "game.Workspace.Model.Part" }, nil, game), part)
	raises(function() Values.decode({ type = "Instance", value = "Workspace.Nope" }, nil, game) end, "Nope")
	eq(Values.decode({ type = "nil" }), nil)
end)

test("non-finite numbers are tagged and come back", function()
	same(Values.encode(math.huge), { type = "number", value = "inf" })
	same(Values.encode(-math.huge), { type = "number", value = "-inf" })
	same(Values.encode(0 / 0), { type = "number", value = "nan" })
	eq(Values.decode({ type = "number", value = "inf" }), math.huge)
	local nan = Values.decode({ type = "number", value = "nan" })
	truthy(nan ~= nan, "nan")
end)

test("plain tables encode recursively; arrays stay arrays; cycles do not loop", function()
	same(Values.encode({ 1, Vector2.new(1, 2), { a = true } }),
		{ 1, { type = "Vector2", value = { 1, 2 } }, { a = true } })
	local t = { name = "x" }
	t.self = t
	eq(Values.encode(t).self, "<cycle>")
end)

test("untagged arrays and names are read as the expected type", function()
	eq(Values.decode({ 0, 5, 0 }, "Vector3"), Vector3.new(0, 5, 0))
	eq(Values.decode({ 1, 0, 0 }, "Color3"), Color3.new(1, 0, 0))
	eq(Values.decode("Grass", "EnumItem", nil, Enum.Material), Enum.Material.Grass)
	eq(Values.decode("Enum.Material.Wood", "EnumItem", nil, Enum.Material), Enum.Material.Wood)
	eq(Values.decode("Bright blue", "BrickColor"), BrickColor.new("Bright blue"))
	eq(Values.decode("hello", "string"), "hello")
end)

test("bad values name the type and show how to write it", function()
	raises(function() Values.decode({ type = "Vector3", value = { 1, 2 } }) end, "[x,y,z]")
	raises(function() Values.decode({ type = "Vector3", value = { 1, "a", 3 } }) end, "element 2")
	raises(function() Values.decode({ type = "Color3", value = { 255, 0, 0 } }) end, "0 to 1")
	raises(function() Values.decode({ type = "BrickColor", value = "Not a colour" }) end, "unknown BrickColor")
	raises(function() Values.decode({ type = "Enum", value = "Enum.Material.Lava" }) end, "has no item \"Lava\"")
	raises(function() Values.decode({ type = "Enum", value = "Enum.Nope.X" }) end, "no enum named \"Nope\"")
	raises(function() Values.decode({ type = "Quaternion", value = {} }) end, "unknown value type \"Quaternion\"")
	raises(function() Values.decode({ 1, 2, 3 }) end, "untagged")
	raises(function() Values.decode({ type = "NumberSequence", value = { { 0.5, 1 }, { 1, 1 } } }) end, "time 0")
	raises(function() Values.decode({ type = "NumberRange", value = { 5, 1 } }) end, "min is greater")
	raises(function() Values.decode({ type = "ColorSequence", value = { { 0, 1, 0 } } }) end, "ColorSequence")
end)

test("forProperty checks the property's type and names it", function()
	local part = game.Workspace.Model.Part
	local err = raises(function() Values.forProperty(part, "Size", "big", game) end, "is a Vector3")
	truthy(err:find("{\"type\":\"Vector3\",\"value\":[x,y,z]}", 1, true), "hint in " .. err)
	raises(function() Values.forProperty(part, "Anchored", { type = "Vector3", value = { 1, 2, 3 } }, game) end,
		"is a boolean")
	raises(function() Values.forProperty(part, "Material", { type = "Enum", value = "Enum.PartType.Ball" }, game) end,
		"Enum.Material")
	raises(function() Values.forProperty(part, "Nonsense", 1, game) end, "has no property \"Nonsense\"")
	raises(function() Values.forProperty(game.Workspace.Model, "Part", 1, game) end, "is a child")
	eq(Values.forProperty(part, "Material", "Wood", game), Enum.Material.Wood)
	eq(Values.forProperty(game.Workspace.Link, "Value", { type = "Instance", value = "Workspace.Lava" }, game),
		game.Workspace.Lava)
end)

test("setProperty assigns and returns the value read back", function()
	local part = game.Workspace.Model.Part
	same(Values.setProperty(part, "Size", { type = "Vector3", value = { 2, 4, 6 } }, game),
		{ type = "Vector3", value = { 2, 4, 6 } })
	eq(part.Size, Vector3.new(2, 4, 6))
end)

test("every value type round-trips through encode and decode (F10)", function()
	Fake.install()
	local Values = Fake.load("Values")
	local samples = {
		Vector3int16.new(1, -2, 3), Vector2int16.new(-4, 5),
		Font.new("rbxasset://fonts/families/GothamSSm.json", Enum.FontWeight.Bold, Enum.FontStyle.Italic),
		PhysicalProperties.new(0.7, 0.3, 0.5, 1, 2),
		Faces.new(Enum.NormalId.Top, Enum.NormalId.Front), Axes.new(Enum.Axis.X, Enum.Axis.Z),
		Content.fromUri("rbxassetid://123"),
		Region3.new(Vector3.new(0, 0, 0), Vector3.new(2, 4, 6)),
		Region3int16.new(Vector3int16.new(0, 1, 2), Vector3int16.new(3, 4, 5)),
		Ray.new(Vector3.new(1, 2, 3), Vector3.new(0, 0, -1)),
	}
	for _, v in ipairs(samples) do
		local e = Values.encode(v)
		eq(e.type, typeof(v), "tag of " .. typeof(v))
		local back = Values.decode(e)
		eq(typeof(back), typeof(v))
		same(Values.encode(back), e, typeof(v) .. " round trip")
	end
	same(Values.encode(Faces.new(Enum.NormalId.Top)).value, { "Top" })
	same(Values.decode({ type = "Font", value = { family = "x" } }).Weight, Enum.FontWeight.Regular)
	raises(function() Values.decode({ type = "Faces", value = { "Up" } }) end, "not an Enum.NormalId name")
	raises(function() Values.decode({ type = "Font", value = { family = "x", weight = "Fat" } }) end, "FontWeight")
	raises(function() Values.decode({ type = "Ray", value = { 1, 2 } }) end, "expected 6 numbers")
end)

test("set_property takes Font, PhysicalProperties (nil before), Faces, Axes, Content; read-modify-write works", function()
	local place, run = Fake.setup()
	local lbl = Fake.make("TextLabel", "L", place.game.StarterGui)
	local got = run("get_instance_properties", { path = "StarterGui.L", properties = { "FontFace" } }).properties.FontFace
	eq(got.type, "Font")
	got.value.weight = "Bold"
	local r = run("set_property", { path = "StarterGui.L", property = "FontFace", value = got })
	eq(r.value.value.weight, "Bold")
	eq(lbl.FontFace.Weight, Enum.FontWeight.Bold)
	local p = run("set_property", { path = "Workspace.Lava", property = "CustomPhysicalProperties",
		value = { type = "PhysicalProperties", value = { 2, 0.5, 0.1, 1, 1 } } })
	same(p.value, { type = "PhysicalProperties", value = { 2, 0.5, 0.1, 1, 1 } })
	run("set_property", { path = "Workspace.Lava", property = "CustomPhysicalProperties", value = { type = "nil" } })
	eq(place.game.Workspace.Lava.CustomPhysicalProperties, nil)
	local h = Fake.make("Handles", "H", place.game.Workspace)
	run("set_property", { path = "Workspace.H", property = "Faces", value = { "Left", "Right" } })
	eq(h.Faces.Left and h.Faces.Right and not h.Faces.Top, true)
	Fake.make("ImageLabel", "I", place.game.StarterGui)
	same(run("set_property", { path = "StarterGui.I", property = "ImageContent", value = { uri = "rbxassetid://9" } }).value,
		{ type = "Content", value = { uri = "rbxassetid://9" } })
	run("set_attribute", { path = "Workspace.Lava", name = "ui.font-face/1", value = got })
	eq(typeof(place.game.Workspace.Lava:GetAttribute("ui.font-face/1")), "Font", "Font attributes, engine names")
end)

-- Audit F10: a property that is nil now has no value to take its type from; the reflection
-- database's Type picks the decoder, so an untagged value (an array, a material name) works.
-- Without ReflectionService the same write fails and says how to tag the value.
test("an untagged value goes into a nil-valued property by its reflected type", function()
	local place, run = Fake.setup()
	local lava = place.game.Workspace.Lava
	eq(lava.CustomPhysicalProperties, nil)
	local err = raises(function()
		run("set_property", { path = "Workspace.Lava", property = "CustomPhysicalProperties",
			value = { 2, 0.5, 0.1, 1, 1 } })
	end, "CustomPhysicalProperties")
	truthy(lava.CustomPhysicalProperties == nil, "nothing was set: " .. err)
	place.state[place.game:GetService("ReflectionService")].enabled = true
	local r = run("set_property", { path = "Workspace.Lava", property = "CustomPhysicalProperties",
		value = { 2, 0.5, 0.1, 1, 1 } })
	same(r.value, { type = "PhysicalProperties", value = { 2, 0.5, 0.1, 1, 1 } })
	eq(typeof(lava.CustomPhysicalProperties), "PhysicalProperties")
	run("set_property", { path = "Workspace.Lava", property = "CustomPhysicalProperties", value = { type = "nil" } })
	run("set_property", { path = "Workspace.Lava", property = "CustomPhysicalProperties", value = "Wood" })
	eq(typeof(lava.CustomPhysicalProperties), "PhysicalProperties", "from a material name")
	raises(function()
		run("set_property", { path = "Workspace.Lava", property = "CustomPhysicalProperties", value = { type = "nil" } })
		run("set_property", { path = "Workspace.Lava", property = "CustomPhysicalProperties", value = { 1, 2 } })
	end, "Workspace.Lava.CustomPhysicalProperties: ")
end)

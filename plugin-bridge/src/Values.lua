-- Values.lua - the tagged JSON encoding of Roblox values (DESIGN §5), both ways.
--
--   Vector3        {"type":"Vector3","value":[x,y,z]}
--   Vector2        {"type":"Vector2","value":[x,y]}
--   Color3         {"type":"Color3","value":[r,g,b]}           components 0..1
--   CFrame         {"type":"CFrame","value":[x,y,z,R00,R01,R02,R10,R11,R12,R20,R21,R22]}
--                  (the 12 numbers of GetComponents(); [x,y,z] alone means no rotation)
--   UDim           {"type":"UDim","value":[scale,offset]}
--   UDim2          {"type":"UDim2","value":[xScale,xOffset,yScale,yOffset]}
--   BrickColor     {"type":"BrickColor","value":"Bright red"}    (name or number)
--   NumberRange    {"type":"NumberRange","value":[min,max]}
--   NumberSequence {"type":"NumberSequence","value":[[time,value,envelope],...]}
--   ColorSequence  {"type":"ColorSequence","value":[[time,r,g,b],...]}
--   Rect           {"type":"Rect","value":[minX,minY,maxX,maxY]}
--   EnumItem       {"type":"Enum","value":"Enum.Material.Grass"}
--   Vector3int16   {"type":"Vector3int16","value":[x,y,z]}   Vector2int16 [x,y]
--   Font           {"type":"Font","value":{"family":"rbxasset://fonts/families/GothamSSm.json",
--                  "weight":"Bold","style":"Normal"}}     (weight and style optional)
--   PhysicalProperties {"type":"PhysicalProperties","value":[density,friction,elasticity,
--                  frictionWeight,elasticityWeight]}    (or a Material name: its defaults)
--   Faces / Axes   {"type":"Faces","value":["Top","Front"]}  {"type":"Axes","value":["X","Z"]}
--   Content        {"type":"Content","value":{"uri":"rbxassetid://123"}}   ({} for none)
--   Region3        {"type":"Region3","value":[minX,minY,minZ,maxX,maxY,maxZ]}, Region3int16 too
--   Ray            {"type":"Ray","value":[originX,originY,originZ,dirX,dirY,dirZ]}
--   Instance       {"type":"Instance","value":"Workspace.Model.Part"}   (a path, see Paths)
--   nil            {"type":"nil"}                                      (clears a reference)
--   inf / nan      {"type":"number","value":"inf"|"-inf"|"nan"}
-- Strings, finite numbers and booleans pass through untagged. When the expected type is known
-- (setting a property or attribute that already holds a value) an untagged array or string is
-- read as that type: [0,5,0] for a Vector3 property, "Grass" or "Enum.Material.Grass" for a
-- Material, "Bright red" for a BrickColor.
--
-- Lua 5.1 subset of Luau: runs unchanged under lua5.1 with the test harness's datatypes.

local Paths = require(script.Parent.Paths)

local Values = {}

Values.TYPES = { "Vector3", "Vector2", "Color3", "CFrame", "UDim", "UDim2", "BrickColor", "NumberRange",
	"NumberSequence", "ColorSequence", "Rect", "Vector3int16", "Vector2int16", "Font", "PhysicalProperties",
	"Faces", "Axes", "Content", "Region3", "Region3int16", "Ray", "Enum", "Instance", "nil", "number" }

local EXAMPLES = {
	Vector3 = "[x,y,z]",
	Vector2 = "[x,y]",
	Color3 = "[r,g,b] with components 0..1",
	CFrame = "the 12 numbers of CFrame:GetComponents() [x,y,z,R00,R01,R02,R10,R11,R12,R20,R21,R22]",
	UDim = "[scale,offset]",
	UDim2 = "[xScale,xOffset,yScale,yOffset]",
	BrickColor = "a BrickColor name such as \"Bright red\"",
	NumberRange = "[min,max]",
	NumberSequence = "[[time,value,envelope],...] with times from 0 to 1",
	ColorSequence = "[[time,r,g,b],...] with times from 0 to 1",
	Rect = "[minX,minY,maxX,maxY]",
	Vector3int16 = "[x,y,z] (whole numbers)",
	Vector2int16 = "[x,y] (whole numbers)",
	Font = "{\"family\":\"rbxasset://fonts/families/GothamSSm.json\",\"weight\":\"Bold\",\"style\":\"Normal\"}",
	PhysicalProperties = "[density,friction,elasticity,frictionWeight,elasticityWeight] or a Material name",
	Faces = "a list of NormalId names [\"Top\",\"Front\"]",
	Axes = "a list of axis names [\"X\",\"Z\"]",
	Content = "{\"uri\":\"rbxassetid://123\"} ({} for none)",
	Region3 = "[minX,minY,minZ,maxX,maxY,maxZ]",
	Region3int16 = "[minX,minY,minZ,maxX,maxY,maxZ] (whole numbers)",
	Ray = "[originX,originY,originZ,dirX,dirY,dirZ]",
	Enum = "a string like \"Enum.Material.Grass\"",
	Instance = "an instance path like \"Workspace.Model.Part\"",
}

-- How to write a value of a Roblox type (typeof name) in a message.
function Values.hint(typeName)
	local tag = typeName == "EnumItem" and "Enum" or typeName
	local ex = EXAMPLES[tag]
	if ex then
		return "{\"type\":\"" .. tag .. "\",\"value\":" .. ex .. "}"
	end
	if typeName == "string" then
		return "a JSON string"
	elseif typeName == "number" then
		return "a JSON number"
	elseif typeName == "boolean" then
		return "true or false"
	end
	return typeName
end

---------------------------------------------------------------- encode (Roblox -> JSON)
local function encodeNumber(n)
	if n ~= n then
		return { type = "number", value = "nan" }
	elseif n == math.huge then
		return { type = "number", value = "inf" }
	elseif n == -math.huge then
		return { type = "number", value = "-inf" }
	end
	return n
end

local function listOf(n, ...)
	local t = { ... }
	local out = {}
	for i = 1, n do
		out[i] = t[i]
	end
	return out
end

local encoders = {
	Vector3 = function(v) return { v.X, v.Y, v.Z } end,
	Vector2 = function(v) return { v.X, v.Y } end,
	Color3 = function(v) return { v.R, v.G, v.B } end,
	CFrame = function(v) return listOf(12, v:GetComponents()) end,
	UDim = function(v) return { v.Scale, v.Offset } end,
	UDim2 = function(v) return { v.X.Scale, v.X.Offset, v.Y.Scale, v.Y.Offset } end,
	BrickColor = function(v) return v.Name end,
	NumberRange = function(v) return { v.Min, v.Max } end,
	NumberSequence = function(v)
		local out = {}
		for i, k in ipairs(v.Keypoints) do
			out[i] = { k.Time, k.Value, k.Envelope }
		end
		return out
	end,
	ColorSequence = function(v)
		local out = {}
		for i, k in ipairs(v.Keypoints) do
			out[i] = { k.Time, k.Value.R, k.Value.G, k.Value.B }
		end
		return out
	end,
	Rect = function(v) return { v.Min.X, v.Min.Y, v.Max.X, v.Max.Y } end,
	Vector3int16 = function(v) return { v.X, v.Y, v.Z } end,
	Vector2int16 = function(v) return { v.X, v.Y } end,
	Font = function(v) return { family = v.Family, weight = v.Weight.Name, style = v.Style.Name } end,
	PhysicalProperties = function(v)
		return { v.Density, v.Friction, v.Elasticity, v.FrictionWeight, v.ElasticityWeight }
	end,
	Faces = function(v)
		local out = {}
		for _, n in ipairs({ "Right", "Top", "Back", "Left", "Bottom", "Front" }) do
			if v[n] then
				table.insert(out, n)
			end
		end
		return out
	end,
	Axes = function(v)
		local out = {}
		for _, n in ipairs({ "X", "Y", "Z" }) do
			if v[n] then
				table.insert(out, n)
			end
		end
		return out
	end,
	Content = function(v)
		local ok, uri = pcall(function() return v.Uri end)
		return { uri = ok and uri or nil }
	end,
	Region3 = function(v)
		local c, h = v.CFrame.Position, v.Size / 2
		return { c.X - h.X, c.Y - h.Y, c.Z - h.Z, c.X + h.X, c.Y + h.Y, c.Z + h.Z }
	end,
	Region3int16 = function(v) return { v.Min.X, v.Min.Y, v.Min.Z, v.Max.X, v.Max.Y, v.Max.Z } end,
	Ray = function(v)
		local o, d = v.Origin, v.Direction
		return { o.X, o.Y, o.Z, d.X, d.Y, d.Z }
	end,
}
-- Faces and Axes share the shape of a list; empty lists are [] either way.

local MAX_DEPTH = 16

local function encode(v, depth, seen)
	local t = typeof(v)
	if t == "nil" or t == "string" or t == "boolean" then
		return v
	elseif t == "number" then
		return encodeNumber(v)
	elseif encoders[t] then
		return { type = t, value = encoders[t](v) }
	elseif t == "EnumItem" then
		return { type = "Enum", value = tostring(v) }
	elseif t == "Instance" then
		return { type = "Instance", value = Paths.format(v) }
	elseif t == "table" then
		if seen[v] then
			return "<cycle>"
		end
		if depth >= MAX_DEPTH then
			return "<table nested too deep>"
		end
		seen[v] = true
		local out = {}
		local n = #v
		local isArray = true
		for k in pairs(v) do
			if type(k) ~= "number" or k < 1 or k > n or k ~= math.floor(k) then
				isArray = false
				break
			end
		end
		if isArray then
			for i = 1, n do
				local e = encode(v[i], depth + 1, seen)
				if e == nil then
					e = { type = "nil" }
				end
				out[i] = e
			end
		else
			for k, e in pairs(v) do
				out[tostring(k)] = encode(e, depth + 1, seen)
			end
		end
		seen[v] = nil
		return out
	end
	-- functions, threads, other Roblox types: a readable stand-in
	return { type = t, value = tostring(v) }
end

-- JSON-able form of any Lua/Roblox value (see the table at the top).
function Values.encode(v)
	return encode(v, 0, {})
end

---------------------------------------------------------------- decode (JSON -> Roblox)
local function fail(typeName, detail)
	error("bad " .. typeName .. " value" .. (detail and (": " .. detail) or "") .. "; write it as "
		.. Values.hint(typeName), 0)
end

local function numbers(typeName, v, count)
	if type(v) ~= "table" or #v ~= count then
		fail(typeName, "expected " .. count .. " numbers")
	end
	for i = 1, count do
		if type(v[i]) ~= "number" then
			fail(typeName, "element " .. i .. " is not a number")
		end
	end
	return v
end

local function color(typeName, r, g, b)
	for _, c in ipairs({ r, g, b }) do
		if type(c) ~= "number" or c < 0 or c > 1 then
			fail(typeName, "colour components are floats from 0 to 1 (divide 0-255 values by 255)")
		end
	end
	return Color3.new(r, g, b)
end

local function resolveEnum(text, expected)
	if type(text) ~= "string" then
		fail("Enum")
	end
	local parts = string.split(text, ".")
	if parts[1] == "Enum" then
		table.remove(parts, 1)
	end
	local enumType, itemName
	if #parts == 2 then
		local ok, et = pcall(function() return Enum[parts[1]] end)
		if not ok then
			fail("Enum", "there is no enum named \"" .. parts[1] .. "\"")
		end
		enumType, itemName = et, parts[2]
	elseif #parts == 1 and expected then
		enumType, itemName = expected, parts[1]
	else
		fail("Enum")
	end
	local ok, item = pcall(function() return enumType[itemName] end)
	if not ok or item == nil then
		local names = {}
		for i, it in ipairs(enumType:GetEnumItems()) do
			if i > 30 then
				table.insert(names, "...")
				break
			end
			table.insert(names, it.Name)
		end
		error("bad Enum value: Enum." .. tostring(enumType) .. " has no item \"" .. itemName .. "\"; its items are "
			.. table.concat(names, ", "), 0)
	end
	return item
end

local decoders = {
	Vector3 = function(v)
		numbers("Vector3", v, 3)
		return Vector3.new(v[1], v[2], v[3])
	end,
	Vector2 = function(v)
		numbers("Vector2", v, 2)
		return Vector2.new(v[1], v[2])
	end,
	Color3 = function(v)
		numbers("Color3", v, 3)
		return color("Color3", v[1], v[2], v[3])
	end,
	CFrame = function(v)
		if type(v) == "table" and #v == 3 then
			numbers("CFrame", v, 3)
			return CFrame.new(v[1], v[2], v[3])
		end
		numbers("CFrame", v, 12)
		return CFrame.new(unpack(v, 1, 12))
	end,
	UDim = function(v)
		numbers("UDim", v, 2)
		return UDim.new(v[1], v[2])
	end,
	UDim2 = function(v)
		numbers("UDim2", v, 4)
		return UDim2.new(v[1], v[2], v[3], v[4])
	end,
	BrickColor = function(v)
		if type(v) ~= "string" and type(v) ~= "number" then
			fail("BrickColor")
		end
		local bc = BrickColor.new(v)
		-- BrickColor.new quietly falls back to a default for unknown names: refuse that
		if bc.Name ~= v and bc.Number ~= v then
			fail("BrickColor", "unknown BrickColor " .. tostring(v))
		end
		return bc
	end,
	NumberRange = function(v)
		if type(v) == "number" then
			return NumberRange.new(v)
		end
		numbers("NumberRange", v, 2)
		if v[2] < v[1] then
			fail("NumberRange", "min is greater than max")
		end
		return NumberRange.new(v[1], v[2])
	end,
	NumberSequence = function(v)
		if type(v) == "number" then
			return NumberSequence.new(v)
		end
		if type(v) ~= "table" or #v < 2 then
			fail("NumberSequence", "expected at least 2 keypoints")
		end
		local kps = {}
		for i, k in ipairs(v) do
			if type(k) ~= "table" or type(k[1]) ~= "number" or type(k[2]) ~= "number" then
				fail("NumberSequence", "keypoint " .. i .. " is not [time,value,envelope]")
			end
			kps[i] = NumberSequenceKeypoint.new(k[1], k[2], k[3] or 0)
		end
		local ok, seq = pcall(NumberSequence.new, kps)
		if not ok then
			fail("NumberSequence", tostring(seq))
		end
		return seq
	end,
	ColorSequence = function(v)
		if type(v) ~= "table" or #v < 2 then
			fail("ColorSequence", "expected at least 2 keypoints")
		end
		local kps = {}
		for i, k in ipairs(v) do
			if type(k) ~= "table" or #k ~= 4 then
				fail("ColorSequence", "keypoint " .. i .. " is not [time,r,g,b]")
			end
			numbers("ColorSequence", k, 4)
			kps[i] = ColorSequenceKeypoint.new(k[1], color("ColorSequence", k[2], k[3], k[4]))
		end
		local ok, seq = pcall(ColorSequence.new, kps)
		if not ok then
			fail("ColorSequence", tostring(seq))
		end
		return seq
	end,
	Rect = function(v)
		numbers("Rect", v, 4)
		return Rect.new(v[1], v[2], v[3], v[4])
	end,
}

local function names(typeName, v, enumName)
	if type(v) ~= "table" then
		fail(typeName, "expected a list of names")
	end
	local items = {}
	for i, n in ipairs(v) do
		local ok, item = pcall(function() return Enum[enumName][n] end)
		if type(n) ~= "string" or not ok or item == nil then
			fail(typeName, "element " .. i .. " is not an Enum." .. enumName .. " name")
		end
		items[i] = item
	end
	return items
end

local function enumNamed(typeName, enumName, name, default)
	if name == nil then
		return default
	end
	local ok, item = pcall(function() return Enum[enumName][name] end)
	if type(name) ~= "string" or not ok or item == nil then
		fail(typeName, "\"" .. tostring(name) .. "\" is not an Enum." .. enumName .. " name")
	end
	return item
end

decoders.Vector3int16 = function(v)
	numbers("Vector3int16", v, 3)
	return Vector3int16.new(v[1], v[2], v[3])
end
decoders.Vector2int16 = function(v)
	numbers("Vector2int16", v, 2)
	return Vector2int16.new(v[1], v[2])
end
decoders.Font = function(v)
	if type(v) == "string" then
		return Font.new(v)
	end
	if type(v) ~= "table" or type(v.family) ~= "string" then
		fail("Font", "expected {family, weight?, style?}")
	end
	return Font.new(v.family, enumNamed("Font", "FontWeight", v.weight, Enum.FontWeight.Regular),
		enumNamed("Font", "FontStyle", v.style, Enum.FontStyle.Normal))
end
decoders.PhysicalProperties = function(v)
	if type(v) == "string" then
		return PhysicalProperties.new(enumNamed("PhysicalProperties", "Material", (string.gsub(v, "^Enum%.Material%.", ""))))
	end
	if type(v) == "table" and #v == 3 then
		numbers("PhysicalProperties", v, 3)
		return PhysicalProperties.new(v[1], v[2], v[3])
	end
	numbers("PhysicalProperties", v, 5)
	return PhysicalProperties.new(v[1], v[2], v[3], v[4], v[5])
end
decoders.Faces = function(v)
	return Faces.new(unpack(names("Faces", v, "NormalId")))
end
decoders.Axes = function(v)
	return Axes.new(unpack(names("Axes", v, "Axis")))
end
decoders.Content = function(v)
	if type(v) == "string" then
		return Content.fromUri(v)
	end
	if type(v) ~= "table" then
		fail("Content")
	end
	if v.uri == nil then
		return Content.none
	end
	if type(v.uri) ~= "string" then
		fail("Content", "uri must be a string")
	end
	return Content.fromUri(v.uri)
end
decoders.Region3 = function(v)
	numbers("Region3", v, 6)
	return Region3.new(Vector3.new(v[1], v[2], v[3]), Vector3.new(v[4], v[5], v[6]))
end
decoders.Region3int16 = function(v)
	numbers("Region3int16", v, 6)
	return Region3int16.new(Vector3int16.new(v[1], v[2], v[3]), Vector3int16.new(v[4], v[5], v[6]))
end
decoders.Ray = function(v)
	numbers("Ray", v, 6)
	return Ray.new(Vector3.new(v[1], v[2], v[3]), Vector3.new(v[4], v[5], v[6]))
end

local function decodeNumber(v)
	if v == "inf" then
		return math.huge
	elseif v == "-inf" then
		return -math.huge
	elseif v == "nan" then
		return 0 / 0
	elseif type(v) == "number" then
		return v
	end
	error("bad number value: use a JSON number, or \"inf\", \"-inf\", \"nan\"", 0)
end

-- Decodes a JSON value into a Roblox value. expected (optional) is the typeof name of the value
-- it replaces, used to read untagged arrays and strings; expectedEnum (optional) is the Enum of
-- the current EnumItem; game resolves Instance paths.
function Values.decode(j, expected, game, expectedEnum)
	if type(j) == "table" and j.type ~= nil then
		local tag = j.type
		if type(tag) ~= "string" then
			error("bad tagged value: \"type\" must be a string such as \"Vector3\"", 0)
		end
		if tag == "nil" then
			return nil
		elseif tag == "number" then
			return decodeNumber(j.value)
		elseif tag == "Enum" or tag == "EnumItem" then
			return resolveEnum(j.value, expectedEnum)
		elseif tag == "Instance" then
			if type(j.value) ~= "string" then
				fail("Instance")
			end
			if not game then
				error("bad Instance value: no DataModel to resolve \"" .. j.value .. "\" in", 0)
			end
			return Paths.resolve(game, j.value)
		elseif tag == "string" or tag == "boolean" then
			return j.value
		end
		local d = decoders[tag]
		if not d then
			error("unknown value type \"" .. tag .. "\"; the types are " .. table.concat(Values.TYPES, ", "), 0)
		end
		return d(j.value)
	end
	if type(j) == "table" then
		if expected and decoders[expected] then
			return decoders[expected](j)
		end
		if expected then
			error("got an untagged array/object where a " .. expected .. " is expected; write it as "
				.. Values.hint(expected), 0)
		end
		error("untagged array or object: tag Roblox values, e.g. {\"type\":\"Vector3\",\"value\":[0,5,0]}", 0)
	end
	if type(j) == "string" and expected then
		if expected == "EnumItem" then
			return resolveEnum(j, expectedEnum)
		elseif expected == "BrickColor" then
			return decoders.BrickColor(j)
		elseif expected == "Instance" and game then
			return Paths.resolve(game, j)
		end
	end
	return j
end

---------------------------------------------------------------- comparison
-- The engine stores many numbers as float32 (BasePart.Transparency, Vector3 and CFrame
-- components) and BasePart.Color as Color3uint8, so a value set from a double reads back
-- rounded: 0.3 becomes 0.30000001192. near() compares numbers with a relative tolerance of
-- 1e-6, the components of vectors, UDims and CFrames likewise, and Color3 within 1/510 (half a
-- step of 8 bits); other values with ==.
local function close(a, b)
	if a == b then
		return true
	end
	if type(a) ~= "number" or type(b) ~= "number" then
		return false
	end
	local scale = math.max(math.abs(a), math.abs(b), 1e-3)
	return math.abs(a - b) <= 1e-6 * scale
end

local COMPONENTS = {
	Vector3 = function(v) return { v.X, v.Y, v.Z } end,
	Vector2 = function(v) return { v.X, v.Y } end,
	UDim = function(v) return { v.Scale, v.Offset } end,
	UDim2 = function(v) return { v.X.Scale, v.X.Offset, v.Y.Scale, v.Y.Offset } end,
	CFrame = function(v) return listOf(12, v:GetComponents()) end,
	NumberRange = function(v) return { v.Min, v.Max } end,
	Rect = function(v) return { v.Min.X, v.Min.Y, v.Max.X, v.Max.Y } end,
}

function Values.near(a, b)
	local t = typeof(a)
	if t ~= typeof(b) then
		return false
	end
	if t == "number" then
		return close(a, b)
	end
	if t == "Color3" then
		local step = 1 / 510 + 1e-6 -- half an 8-bit step, and float32 rounding on top
		return math.abs(a.R - b.R) <= step and math.abs(a.G - b.G) <= step and math.abs(a.B - b.B) <= step
	end
	local comps = COMPONENTS[t]
	if comps then
		local x, y = comps(a), comps(b)
		for i = 1, #x do
			if not close(x[i], y[i]) then
				return false
			end
		end
		return true
	end
	if a == b then
		return true
	end
	-- Records (Font, PhysicalProperties, Faces, ...): equal encodings, numbers within tolerance.
	local enc = encoders[t]
	if enc then
		local function same(x, y)
			if type(x) == "table" and type(y) == "table" then
				for k, v in pairs(x) do
					if not same(v, y[k]) then
						return false
					end
				end
				for k in pairs(y) do
					if x[k] == nil then
						return false
					end
				end
				return true
			end
			return close(x, y)
		end
		return same(enc(a), enc(b))
	end
	return false
end

---------------------------------------------------------------- properties
-- Reads a property; returns ok, value (ok false with a message when the member does not exist).
function Values.read(inst, prop)
	local ok, v = pcall(function()
		return inst[prop]
	end)
	if not ok then
		return false, Paths.format(inst) .. " (" .. inst.ClassName .. ") has no property \"" .. tostring(prop) .. "\""
	end
	if typeof(v) == "Instance" and v.Parent ~= nil and v:IsDescendantOf(inst) then
		-- inst.Child resolves children too; a property read must not return a child by name
		local isChild = false
		for _, c in ipairs(inst:GetChildren()) do
			if c == v and c.Name == prop then
				isChild = true
			end
		end
		if isChild then
			return false, Paths.format(inst) .. " (" .. inst.ClassName .. ") has no property \"" .. prop
				.. "\" (\"" .. prop .. "\" is a child; address it as a path)"
		end
	end
	return true, v
end

-- The type the reflection database gives inst's property (ReflectionService, when Studio has
-- it), for a property whose value is nil now (BasePart.CustomPhysicalProperties): its decoder
-- reads an untagged value (an array, or a name such as a material's). nil when unknown.
local function reflectedType(inst, prop, game)
	local ok, list = pcall(function()
		return game:GetService("ReflectionService"):GetPropertiesOfClass(inst.ClassName)
	end)
	if not ok or type(list) ~= "table" then
		return nil
	end
	for _, p in ipairs(list) do
		if type(p) == "table" and p.Name == prop then
			local t = p.Type
			if type(t) == "table" then
				t = t.Name
			end
			if type(t) == "string" and decoders[t] then
				return t
			end
		end
	end
	return nil
end

-- Decodes j for inst[prop], checking the type against the current value. Returns the value.
function Values.forProperty(inst, prop, j, game)
	local ok, cur = Values.read(inst, prop)
	if not ok then
		error(cur, 0)
	end
	local expected = nil
	local expectedEnum = nil
	if cur ~= nil then
		expected = typeof(cur)
		if expected == "EnumItem" then
			expectedEnum = cur.EnumType
		end
	elseif game and ((type(j) == "table" and j.type == nil) or type(j) == "string") then
		local t = reflectedType(inst, prop, game)
		if t then
			local okD, v = pcall(decoders[t], j)
			if not okD then
				error(Paths.format(inst) .. "." .. prop .. ": " .. tostring(v), 0)
			end
			return v
		end
	end
	local okDecode, value = pcall(Values.decode, j, expected, game, expectedEnum)
	if not okDecode then
		error(Paths.format(inst) .. "." .. prop .. ": " .. tostring(value), 0)
	end
	if expected ~= nil and value ~= nil then
		local got = typeof(value)
		if got ~= expected then
			error(Paths.format(inst) .. "." .. prop .. " is a " .. expected .. "; got " .. got
				.. ". Write it as " .. Values.hint(expected), 0)
		end
		if expected == "EnumItem" and value.EnumType ~= cur.EnumType then
			error(Paths.format(inst) .. "." .. prop .. " is an Enum." .. tostring(cur.EnumType) .. "; got "
				.. tostring(value), 0)
		end
	end
	return value
end

-- Sets inst[prop] from JSON j; returns the value read back, encoded.
function Values.setProperty(inst, prop, j, game)
	local value = Values.forProperty(inst, prop, j, game)
	local ok, err = pcall(function()
		inst[prop] = value
	end)
	if not ok then
		error("cannot set " .. Paths.format(inst) .. "." .. prop .. ": " .. tostring(err):gsub("^.-:%d+: ", ""), 0)
	end
	local _, back = Values.read(inst, prop)
	return Values.encode(back)
end

return Values

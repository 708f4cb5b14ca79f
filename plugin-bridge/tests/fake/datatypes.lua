-- tests/fake/datatypes.lua - Roblox datatypes for the lua5.1 test harness: Vector3, Vector2,
-- Color3, CFrame (12 exact components), UDim, UDim2, BrickColor, NumberRange, NumberSequence,
-- ColorSequence (+ keypoints), Rect, Enum/EnumItem and typeof. Values are immutable tables
-- whose metatable carries __type, which typeof reports (Roblox's `type` would say "userdata").
-- Reading a member a type does not have fails like Roblox does ("X is not a valid member of T").

local D = {}

local function typeof(v)
	local mt = type(v) == "table" and getmetatable(v) or nil
	if mt and mt.__type then
		return mt.__type
	end
	return type(v)
end
D.typeof = typeof

-- Builds a datatype: fields live in rawget-able slot `_f`, getters in `get`, methods in `methods`.
local function datatype(name, get, methods)
	local mt = { __type = name }
	mt.__index = function(self, key)
		local g = get[key]
		if g then
			return g(self)
		end
		local m = methods and methods[key]
		if m then
			return m
		end
		error(tostring(key) .. " is not a valid member of " .. name, 2)
	end
	mt.__newindex = function(_, key)
		error(tostring(key) .. " cannot be assigned to (" .. name .. " is immutable)", 2)
	end
	return mt
end

local function num(x, what)
	if x == nil then
		return 0
	end
	if type(x) ~= "number" then
		error("invalid argument " .. what .. " (number expected, got " .. typeof(x) .. ")", 3)
	end
	return x
end

local function fmt(x)
	return string.format("%.14g", x)
end

---------------------------------------------------------------- Vector3 / Vector2
local V3 = {}
local V3mt
V3mt = datatype("Vector3", {
	X = function(v) return v._f[1] end,
	Y = function(v) return v._f[2] end,
	Z = function(v) return v._f[3] end,
	Magnitude = function(v)
		return math.sqrt(v._f[1] ^ 2 + v._f[2] ^ 2 + v._f[3] ^ 2)
	end,
	Unit = function(v)
		local m = v.Magnitude
		return V3.new(v._f[1] / m, v._f[2] / m, v._f[3] / m)
	end,
}, {
	Dot = function(a, b) return a.X * b.X + a.Y * b.Y + a.Z * b.Z end,
	Cross = function(a, b)
		return V3.new(a.Y * b.Z - a.Z * b.Y, a.Z * b.X - a.X * b.Z, a.X * b.Y - a.Y * b.X)
	end,
})
function V3.new(x, y, z)
	return setmetatable({ _f = { num(x, "#1"), num(y, "#2"), num(z, "#3") } }, V3mt)
end
local function v3op(f)
	return function(a, b)
		if type(a) == "number" then
			return V3.new(f(a, b.X), f(a, b.Y), f(a, b.Z))
		elseif type(b) == "number" then
			return V3.new(f(a.X, b), f(a.Y, b), f(a.Z, b))
		end
		return V3.new(f(a.X, b.X), f(a.Y, b.Y), f(a.Z, b.Z))
	end
end
V3mt.__add = v3op(function(a, b) return a + b end)
V3mt.__sub = v3op(function(a, b) return a - b end)
V3mt.__mul = v3op(function(a, b) return a * b end)
V3mt.__div = v3op(function(a, b) return a / b end)
V3mt.__unm = function(a) return V3.new(-a.X, -a.Y, -a.Z) end
V3mt.__eq = function(a, b) return a.X == b.X and a.Y == b.Y and a.Z == b.Z end
V3mt.__tostring = function(v) return fmt(v.X) .. ", " .. fmt(v.Y) .. ", " .. fmt(v.Z) end
V3.zero = V3.new(0, 0, 0)
V3.one = V3.new(1, 1, 1)
D.Vector3 = V3

local V2 = {}
local V2mt
V2mt = datatype("Vector2", {
	X = function(v) return v._f[1] end,
	Y = function(v) return v._f[2] end,
	Magnitude = function(v) return math.sqrt(v._f[1] ^ 2 + v._f[2] ^ 2) end,
})
function V2.new(x, y)
	return setmetatable({ _f = { num(x, "#1"), num(y, "#2") } }, V2mt)
end
V2mt.__add = function(a, b) return V2.new(a.X + b.X, a.Y + b.Y) end
V2mt.__sub = function(a, b) return V2.new(a.X - b.X, a.Y - b.Y) end
V2mt.__mul = function(a, b)
	if type(b) == "number" then
		return V2.new(a.X * b, a.Y * b)
	elseif type(a) == "number" then
		return V2.new(a * b.X, a * b.Y)
	end
	return V2.new(a.X * b.X, a.Y * b.Y)
end
V2mt.__eq = function(a, b) return a.X == b.X and a.Y == b.Y end
V2mt.__tostring = function(v) return fmt(v.X) .. ", " .. fmt(v.Y) end
V2.zero = V2.new(0, 0)
D.Vector2 = V2

---------------------------------------------------------------- Color3
local C3 = {}
local C3mt = datatype("Color3", {
	R = function(c) return c._f[1] end,
	G = function(c) return c._f[2] end,
	B = function(c) return c._f[3] end,
}, {
	ToHex = function(c)
		return string.format("%02x%02x%02x", math.floor(c.R * 255 + 0.5), math.floor(c.G * 255 + 0.5),
			math.floor(c.B * 255 + 0.5))
	end,
})
function C3.new(r, g, b)
	return setmetatable({ _f = { num(r, "#1"), num(g, "#2"), num(b, "#3") } }, C3mt)
end
function C3.fromRGB(r, g, b)
	return C3.new(num(r, "#1") / 255, num(g, "#2") / 255, num(b, "#3") / 255)
end
C3mt.__eq = function(a, b) return a.R == b.R and a.G == b.G and a.B == b.B end
C3mt.__tostring = function(c) return fmt(c.R) .. ", " .. fmt(c.G) .. ", " .. fmt(c.B) end
D.Color3 = C3

---------------------------------------------------------------- CFrame
-- Stored as the 12 numbers of GetComponents(): x, y, z, R00, R01, R02, R10, R11, R12, R20, R21, R22.
local CF = {}
local CFmt
CFmt = datatype("CFrame", {
	X = function(c) return c._f[1] end,
	Y = function(c) return c._f[2] end,
	Z = function(c) return c._f[3] end,
	Position = function(c) return V3.new(c._f[1], c._f[2], c._f[3]) end,
	RightVector = function(c) return V3.new(c._f[4], c._f[7], c._f[10]) end,
	UpVector = function(c) return V3.new(c._f[5], c._f[8], c._f[11]) end,
	LookVector = function(c) return V3.new(-c._f[6], -c._f[9], -c._f[12]) end,
	Rotation = function(c)
		local f = c._f
		return CF.new(0, 0, 0, f[4], f[5], f[6], f[7], f[8], f[9], f[10], f[11], f[12])
	end,
}, {
	GetComponents = function(c)
		return unpack(c._f, 1, 12)
	end,
	Inverse = function(c)
		local f = c._f
		-- rotation is orthonormal: its inverse is its transpose
		local r = { f[4], f[7], f[10], f[5], f[8], f[11], f[6], f[9], f[12] }
		local x = -(r[1] * f[1] + r[2] * f[2] + r[3] * f[3])
		local y = -(r[4] * f[1] + r[5] * f[2] + r[6] * f[3])
		local z = -(r[7] * f[1] + r[8] * f[2] + r[9] * f[3])
		return CF.new(x, y, z, r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9])
	end,
})
function CF.new(...)
	local n = select("#", ...)
	local a = { ... }
	if n == 0 then
		return setmetatable({ _f = { 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1 } }, CFmt)
	end
	if n == 1 and typeof(a[1]) == "Vector3" then
		return CF.new(a[1].X, a[1].Y, a[1].Z)
	end
	if n == 3 then
		return setmetatable({ _f = { num(a[1], "#1"), num(a[2], "#2"), num(a[3], "#3"), 1, 0, 0, 0, 1, 0, 0, 0, 1 } },
			CFmt)
	end
	if n == 12 then
		local f = {}
		for i = 1, 12 do
			f[i] = num(a[i], "#" .. i)
		end
		return setmetatable({ _f = f }, CFmt)
	end
	error("invalid number of arguments to CFrame.new: " .. n, 2)
end
function CF.Angles(rx, ry, rz)
	local cx, sx = math.cos(rx), math.sin(rx)
	local cy, sy = math.cos(ry), math.sin(ry)
	local cz, sz = math.cos(rz), math.sin(rz)
	-- R = Rx * Ry * Rz
	return CF.new(0, 0, 0,
		cy * cz, -cy * sz, sy,
		cx * sz + sx * sy * cz, cx * cz - sx * sy * sz, -sx * cy,
		sx * sz - cx * sy * cz, sx * cz + cx * sy * sz, cx * cy)
end
CF.fromEulerAnglesXYZ = CF.Angles
CFmt.__mul = function(a, b)
	local f = a._f
	if typeof(b) == "Vector3" then
		return V3.new(f[4] * b.X + f[5] * b.Y + f[6] * b.Z + f[1], f[7] * b.X + f[8] * b.Y + f[9] * b.Z + f[2],
			f[10] * b.X + f[11] * b.Y + f[12] * b.Z + f[3])
	end
	local g = b._f
	local r = {}
	for i = 0, 2 do
		for j = 0, 2 do
			r[i * 3 + j + 1] = f[4 + i * 3] * g[4 + j] + f[5 + i * 3] * g[7 + j] + f[6 + i * 3] * g[10 + j]
		end
	end
	local p = a * V3.new(g[1], g[2], g[3])
	return CF.new(p.X, p.Y, p.Z, r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9])
end
CFmt.__add = function(a, v)
	local f = a._f
	return CF.new(f[1] + v.X, f[2] + v.Y, f[3] + v.Z, f[4], f[5], f[6], f[7], f[8], f[9], f[10], f[11], f[12])
end
CFmt.__sub = function(a, v)
	return a + (-v)
end
CFmt.__eq = function(a, b)
	for i = 1, 12 do
		if a._f[i] ~= b._f[i] then
			return false
		end
	end
	return true
end
CFmt.__tostring = function(c)
	local parts = {}
	for i = 1, 12 do
		parts[i] = fmt(c._f[i])
	end
	return table.concat(parts, ", ")
end
CF.identity = CF.new()
D.CFrame = CF

---------------------------------------------------------------- UDim / UDim2
local UD = {}
local UDmt = datatype("UDim", {
	Scale = function(u) return u._f[1] end,
	Offset = function(u) return u._f[2] end,
})
function UD.new(s, o)
	return setmetatable({ _f = { num(s, "#1"), num(o, "#2") } }, UDmt)
end
UDmt.__eq = function(a, b) return a.Scale == b.Scale and a.Offset == b.Offset end
UDmt.__tostring = function(u) return fmt(u.Scale) .. ", " .. fmt(u.Offset) end
D.UDim = UD

local UD2 = {}
local UD2mt = datatype("UDim2", {
	X = function(u) return u._f[1] end,
	Y = function(u) return u._f[2] end,
	Width = function(u) return u._f[1] end,
	Height = function(u) return u._f[2] end,
})
function UD2.new(xs, xo, ys, yo)
	if typeof(xs) == "UDim" then
		return setmetatable({ _f = { xs, xo } }, UD2mt)
	end
	return setmetatable({ _f = { UD.new(xs, xo), UD.new(ys, yo) } }, UD2mt)
end
function UD2.fromScale(x, y) return UD2.new(x, 0, y, 0) end
function UD2.fromOffset(x, y) return UD2.new(0, x, 0, y) end
UD2mt.__eq = function(a, b) return a.X == b.X and a.Y == b.Y end
UD2mt.__tostring = function(u) return "{" .. tostring(u.X) .. "}, {" .. tostring(u.Y) .. "}" end
D.UDim2 = UD2

---------------------------------------------------------------- BrickColor
local PALETTE = {
	{ 194, "Medium stone grey", 163, 162, 165 },
	{ 1, "White", 242, 243, 243 },
	{ 21, "Bright red", 196, 40, 28 },
	{ 23, "Bright blue", 13, 105, 172 },
	{ 24, "Bright yellow", 245, 205, 48 },
	{ 26, "Black", 27, 42, 53 },
	{ 28, "Dark green", 40, 127, 71 },
	{ 1004, "Really red", 255, 0, 0 },
	{ 1020, "Lime green", 0, 255, 0 },
	{ 1001, "Institutional white", 248, 248, 248 },
}
local BC = {}
local BCmt = datatype("BrickColor", {
	Name = function(b) return b._f[2] end,
	Number = function(b) return b._f[1] end,
	Color = function(b) return C3.fromRGB(b._f[3], b._f[4], b._f[5]) end,
	r = function(b) return b._f[3] / 255 end,
	g = function(b) return b._f[4] / 255 end,
	b = function(b) return b._f[5] / 255 end,
})
function BC.new(x)
	for _, p in ipairs(PALETTE) do
		if p[1] == x or p[2] == x then
			return setmetatable({ _f = p }, BCmt)
		end
	end
	-- like Roblox: an unknown name or number silently gives the default colour
	return setmetatable({ _f = PALETTE[1] }, BCmt)
end
BCmt.__eq = function(a, b) return a.Number == b.Number end
BCmt.__tostring = function(b) return b.Name end
D.BrickColor = BC

---------------------------------------------------------------- NumberRange / sequences / Rect
local NR = {}
local NRmt = datatype("NumberRange", {
	Min = function(r) return r._f[1] end,
	Max = function(r) return r._f[2] end,
})
function NR.new(a, b)
	if b == nil then
		b = a
	end
	if num(b, "#2") < num(a, "#1") then
		error("NumberRange: invalid range", 2)
	end
	return setmetatable({ _f = { a, b } }, NRmt)
end
NRmt.__eq = function(a, b) return a.Min == b.Min and a.Max == b.Max end
NRmt.__tostring = function(r) return fmt(r.Min) .. " " .. fmt(r.Max) .. " " end
D.NumberRange = NR

local NSK = {}
local NSKmt = datatype("NumberSequenceKeypoint", {
	Time = function(k) return k._f[1] end,
	Value = function(k) return k._f[2] end,
	Envelope = function(k) return k._f[3] end,
})
function NSK.new(t, v, e)
	return setmetatable({ _f = { num(t, "#1"), num(v, "#2"), num(e, "#3") } }, NSKmt)
end
NSKmt.__eq = function(a, b) return a.Time == b.Time and a.Value == b.Value and a.Envelope == b.Envelope end
D.NumberSequenceKeypoint = NSK

local function checkKeypoints(kps, what)
	if #kps < 2 then
		error(what .. ": at least 2 keypoints are required", 3)
	end
	if kps[1].Time ~= 0 or kps[#kps].Time ~= 1 then
		error(what .. ": the first keypoint must be at time 0 and the last at time 1", 3)
	end
	for i = 2, #kps do
		if kps[i].Time < kps[i - 1].Time then
			error(what .. ": keypoints must be ordered by time", 3)
		end
	end
end

local NS = {}
local NSmt = datatype("NumberSequence", {
	Keypoints = function(s)
		local out = {}
		for i, k in ipairs(s._f) do
			out[i] = k
		end
		return out
	end,
})
function NS.new(a, b)
	local kps
	if type(a) == "table" and typeof(a) == "table" then
		kps = a
	elseif b ~= nil then
		kps = { NSK.new(0, a), NSK.new(1, b) }
	else
		kps = { NSK.new(0, a), NSK.new(1, a) }
	end
	checkKeypoints(kps, "NumberSequence")
	return setmetatable({ _f = kps }, NSmt)
end
local function seqEq(a, b)
	if #a._f ~= #b._f then
		return false
	end
	for i = 1, #a._f do
		if not (a._f[i] == b._f[i]) then
			return false
		end
	end
	return true
end
NSmt.__eq = seqEq
D.NumberSequence = NS

local CSK = {}
local CSKmt = datatype("ColorSequenceKeypoint", {
	Time = function(k) return k._f[1] end,
	Value = function(k) return k._f[2] end,
})
function CSK.new(t, c)
	return setmetatable({ _f = { num(t, "#1"), c } }, CSKmt)
end
CSKmt.__eq = function(a, b) return a.Time == b.Time and a.Value == b.Value end
D.ColorSequenceKeypoint = CSK

local CS = {}
local CSmt = datatype("ColorSequence", {
	Keypoints = function(s)
		local out = {}
		for i, k in ipairs(s._f) do
			out[i] = k
		end
		return out
	end,
})
function CS.new(a, b)
	local kps
	if typeof(a) == "table" then
		kps = a
	else
		kps = { CSK.new(0, a), CSK.new(1, b or a) }
	end
	checkKeypoints(kps, "ColorSequence")
	return setmetatable({ _f = kps }, CSmt)
end
CSmt.__eq = seqEq
D.ColorSequence = CS

local RC = {}
local RCmt = datatype("Rect", {
	Min = function(r) return V2.new(r._f[1], r._f[2]) end,
	Max = function(r) return V2.new(r._f[3], r._f[4]) end,
	Width = function(r) return r._f[3] - r._f[1] end,
	Height = function(r) return r._f[4] - r._f[2] end,
})
function RC.new(a, b, c, d)
	if typeof(a) == "Vector2" then
		return setmetatable({ _f = { a.X, a.Y, b.X, b.Y } }, RCmt)
	end
	return setmetatable({ _f = { num(a, "#1"), num(b, "#2"), num(c, "#3"), num(d, "#4") } }, RCmt)
end
RCmt.__eq = function(a, b)
	for i = 1, 4 do
		if a._f[i] ~= b._f[i] then
			return false
		end
	end
	return true
end
D.Rect = RC

---------------------------------------------------------------- Enum
local ENUMS = {
	Material = { "Plastic", "SmoothPlastic", "Wood", "Grass", "Concrete", "Metal", "Neon", "Glass", "Sand" },
	PartType = { "Ball", "Block", "Cylinder" },
	MessageType = { "MessageOutput", "MessageInfo", "MessageWarning", "MessageError" },
	FinishRecordingOperation = { "Cancel", "Commit", "Append" },
	SortOrder = { "Name", "Custom", "LayoutOrder" },
	SurfaceType = { "Smooth", "Glue", "Weld", "Studs", "Inlet" },
	RunState = { "Stopped", "Running", "Paused" },
	FontWeight = { "Thin", "ExtraLight", "Light", "Regular", "Medium", "SemiBold", "Bold", "ExtraBold", "Heavy" },
	FontStyle = { "Normal", "Italic" },
	NormalId = { "Right", "Top", "Back", "Left", "Bottom", "Front" },
	Axis = { "X", "Y", "Z" },
	ContentSourceType = { "None", "Uri", "Object" },
	StudioCaptureScreenshotFormat = { "RGBA8", "PNG" },
	StudioCaptureBufferStatus = { "NotStarted", "Pending", "Ready", "Error" },
	ResamplerMode = { "Default", "Pixelated" },
}
local enumItemMt = datatype("EnumItem", {
	Name = function(i) return i._f[1] end,
	Value = function(i) return i._f[2] end,
	EnumType = function(i) return i._f[3] end,
})
enumItemMt.__tostring = function(i) return "Enum." .. tostring(i._f[3]) .. "." .. i._f[1] end
enumItemMt.__eq = function(a, b) return rawequal(a, b) end

local Enum = {}
local EnumMt = { __type = "Enums" }
local builtTypes = {}
EnumMt.__index = function(_, key)
	return builtTypes[key] or error(tostring(key) .. " is not a valid member of \"Enum\"", 2)
end
for typeName, names in pairs(ENUMS) do
	local items, list = {}, {}
	local enumType = setmetatable({}, {
		__type = "Enum",
		__tostring = function() return typeName end,
		__index = function(_, key)
			if key == "GetEnumItems" then
				return function()
					local out = {}
					for i, it in ipairs(list) do
						out[i] = it
					end
					return out
				end
			end
			local it = items[key]
			if it then
				return it
			end
			error(tostring(key) .. " is not a valid member of \"Enum." .. typeName .. "\"", 2)
		end,
	})
	for i, n in ipairs(names) do
		local it = setmetatable({ _f = { n, i - 1, enumType } }, enumItemMt)
		items[n] = it
		list[i] = it
	end
	builtTypes[typeName] = enumType
end
D.Enum = setmetatable(Enum, EnumMt)

---------------------------------------------------------------- records: Font, PhysicalProperties,
-- Faces, Axes, Vector3int16, Vector2int16, Content, Region3, Region3int16, Ray. Each is an
-- immutable table of named fields (getters), equal when every field is equal.
local function record(name, fields, extra)
	local get = {}
	for i, f in ipairs(fields) do
		get[f] = function(v) return v._f[i] end
	end
	for k, g in pairs(extra or {}) do
		get[k] = g
	end
	local mt = datatype(name, get)
	mt.__eq = function(a, b)
		for i = 1, #fields do
			if a._f[i] ~= b._f[i] then
				return false
			end
		end
		return true
	end
	mt.__tostring = function(v)
		local parts = {}
		for i = 1, #fields do
			parts[i] = tostring(v._f[i])
		end
		return table.concat(parts, ", ")
	end
	return function(...)
		return setmetatable({ _f = { ... } }, mt)
	end
end

local function int16(x, what)
	x = num(x, what)
	if x < -32768 or x > 32767 then
		x = ((math.floor(x) + 32768) % 65536) - 32768
	end
	return math.floor(x)
end

local newV3i = record("Vector3int16", { "X", "Y", "Z" })
D.Vector3int16 = { new = function(x, y, z) return newV3i(int16(x, "#1"), int16(y, "#2"), int16(z, "#3")) end }
local newV2i = record("Vector2int16", { "X", "Y" })
D.Vector2int16 = { new = function(x, y) return newV2i(int16(x, "#1"), int16(y, "#2")) end }

local newFont = record("Font", { "Family", "Weight", "Style" }, {
	Bold = function(v) return v._f[2].Value >= 6 end,
})
D.Font = {
	new = function(family, weight, style)
		if type(family) ~= "string" then
			error("invalid argument #1 to 'new' (string expected, got " .. typeof(family) .. ")", 2)
		end
		return newFont(family, weight or D.Enum.FontWeight.Regular, style or D.Enum.FontStyle.Normal)
	end,
}

local newPP = record("PhysicalProperties", { "Density", "Friction", "Elasticity", "FrictionWeight", "ElasticityWeight" })
D.PhysicalProperties = {
	new = function(a, b, c, d, e)
		if typeof(a) == "EnumItem" then
			return newPP(0.7, 0.3, 0.5, 1, 1) -- the material's defaults (one row is enough here)
		end
		return newPP(num(a, "#1"), num(b, "#2"), num(c, "#3"), d == nil and 1 or num(d, "#4"), e == nil and 1 or num(e, "#5"))
	end,
}

local function flags(name, names)
	local fields = {}
	for i, n in ipairs(names) do
		fields[i] = n
	end
	local make = record(name, fields)
	return {
		new = function(...)
			local on = {}
			for i = 1, select("#", ...) do
				local it = select(i, ...)
				if typeof(it) ~= "EnumItem" then
					error("invalid argument #" .. i .. " to 'new' (EnumItem expected)", 2)
				end
				on[it.Name] = true
			end
			local vals = {}
			for i, n in ipairs(names) do
				vals[i] = on[n] == true
			end
			return make(unpack(vals, 1, #names))
		end,
	}
end
D.Faces = flags("Faces", { "Right", "Top", "Back", "Left", "Bottom", "Front" })
D.Axes = flags("Axes", { "X", "Y", "Z" })

local newContent = record("Content", { "Uri", "SourceType" })
D.Content = {
	fromUri = function(uri)
		return newContent(uri, D.Enum.ContentSourceType.Uri)
	end,
}
D.Content.none = newContent(nil, D.Enum.ContentSourceType.None)

local newRegion3 = record("Region3", { "CFrame", "Size" })
D.Region3 = {
	new = function(lo, hi)
		return newRegion3(D.CFrame.new((lo.X + hi.X) / 2, (lo.Y + hi.Y) / 2, (lo.Z + hi.Z) / 2),
			D.Vector3.new(hi.X - lo.X, hi.Y - lo.Y, hi.Z - lo.Z))
	end,
}
local newRegion3i = record("Region3int16", { "Min", "Max" })
D.Region3int16 = { new = function(lo, hi) return newRegion3i(lo, hi) end }
local newRay = record("Ray", { "Origin", "Direction" })
D.Ray = { new = function(o, d) return newRay(o, d) end }

return D

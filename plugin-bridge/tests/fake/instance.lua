-- tests/fake/instance.lua - a fake Roblox Instance tree for the lua5.1 harness.
--
-- Instances are tables whose state lives in a side table (so a child called "Name" or
-- "_props" never collides with the implementation). Each class declares its superclass, its
-- properties with default values (the default's typeof is the property's type; NILREF marks an
-- Instance reference that starts nil) and its methods. Indexing works like Roblox: methods,
-- then properties, then a child with that name, else "X is not a valid member of Class". Setting
-- a property checks the type like Roblox ("Unable to assign property Size. Vector3 expected, got
-- string"). Services are Instances of their own classes (see services.lua).

local D = require("datatypes")
local typeof = D.typeof

local M = {}
local NILREF = setmetatable({}, { __tostring = function() return "NILREF" end })
M.NILREF = NILREF

-- A property of a datatype whose value may be nil (BasePart.CustomPhysicalProperties):
-- M.nilOf("PhysicalProperties") as its default.
local nilTypes = setmetatable({}, { __mode = "k" })
function M.nilOf(typeName)
	local t = setmetatable({}, { __tostring = function() return "nil " .. typeName end })
	nilTypes[t] = typeName
	return t
end

-- The properties of a class as ReflectionService:GetPropertiesOfClass gives them:
-- {Name = name, Type = {Name = type}}, the type of a nil-valued property from its nilOf default.
function M.propertiesOf(className)
	local out, seen = {}, {}
	local c = M.classes and M.classes[className]
	while c do
		for k, v in pairs(c.props) do
			if not seen[k] then
				seen[k] = true
				local t = nilTypes[v] or (v == NILREF and "Instance") or typeof(v)
				table.insert(out, { Name = k, Type = { Name = t } })
			end
		end
		c = c.super and M.classes[c.super]
	end
	table.sort(out, function(a, b) return a.Name < b.Name end)
	return out
end

-- The engine stores many numbers as float32 (BasePart.Transparency is "float") and BasePart.Color
-- as Color3uint8: what is read back is rounded. Converters for class specs (spec.store).
local function f32(x)
	if x == 0 or x ~= x or x == math.huge or x == -math.huge then
		return x
	end
	local m, e = math.frexp(x)
	m = math.floor(m * 2 ^ 24 + 0.5) / 2 ^ 24
	return math.ldexp(m, e)
end
M.f32 = f32
function M.storeFloat(v)
	return f32(v)
end
function M.storeColor8(c)
	local D0 = require("datatypes")
	local function q(x)
		return math.floor(x * 255 + 0.5) / 255
	end
	return D0.Color3.new(f32(q(c.R)), f32(q(c.G)), f32(q(c.B)))
end
function M.storeVector3(v)
	local D0 = require("datatypes")
	return D0.Vector3.new(f32(v.X), f32(v.Y), f32(v.Z))
end

local state = setmetatable({}, { __mode = "k" })
M.state = state -- tests may peek (e.g. the editor draft of a script)

local classes = {}
M.classes = classes

-- Declares a class. spec = {super=, props={name=default}, methods={}, creatable=bool,
-- computed={name={get=function(inst), set=function(inst, v)}}}.
function M.defineClass(name, spec)
	spec.name = name
	if spec.super == nil and name ~= "Instance" then
		spec.super = "Instance"
	end
	spec.props = spec.props or {}
	spec.methods = spec.methods or {}
	spec.computed = spec.computed or {}
	spec.store = spec.store or {}
	if spec.creatable == nil then
		spec.creatable = true
	end
	classes[name] = spec
end

local function lookup(className, field, key)
	local c = classes[className]
	while c do
		local v = c[field][key]
		if v ~= nil then
			return v, c
		end
		c = c.super and classes[c.super]
	end
	return nil
end

local function isA(className, other)
	local c = classes[className]
	while c do
		if c.name == other then
			return true
		end
		c = c.super and classes[c.super]
	end
	return other == "Instance"
end

local InstanceMt = { __type = "Instance" }

local function fullName(inst)
	local parts = {}
	local cur = inst
	while cur do
		local st = state[cur]
		if st.className == "DataModel" then
			break
		end
		table.insert(parts, 1, st.props.Name)
		cur = st.parent
	end
	return table.concat(parts, ".")
end
M.fullName = fullName

local function memberError(inst, key)
	local st = state[inst]
	error(tostring(key) .. " is not a valid member of " .. st.className .. " \"" .. fullName(inst) .. "\"", 3)
end

InstanceMt.__index = function(inst, key)
	local st = state[inst]
	if key == "ClassName" then
		return st.className
	elseif key == "Parent" then
		return st.parent
	end
	local m = lookup(st.className, "methods", key)
	if m then
		return m
	end
	local comp = lookup(st.className, "computed", key)
	if comp then
		return comp.get(inst)
	end
	local v = st.props[key]
	if v ~= nil then
		if v == NILREF or nilTypes[v] then
			return nil
		end
		return v
	end
	for _, child in ipairs(st.children) do
		if state[child].props.Name == key then
			return child
		end
	end
	memberError(inst, key)
end

-- While a ChangeHistoryService recording is open, M.recorder(undo) gets, before each change
-- (Parent, a property, an attribute, a tag), a function that reverts it; Cancel runs them
-- newest first, so a cancelled recording leaves the place as it was (as the engine does).
M.recorder = nil
local function note(undo)
	if M.recorder then
		M.recorder(undo)
	end
end

local function setParent(inst, parent)
	local st = state[inst]
	if st.destroyed then
		error("The Parent property of " .. st.props.Name .. " is locked, current parent: NULL, new parent "
			.. (parent and state[parent].props.Name or "NULL"), 3)
	end
	if parent ~= nil and typeof(parent) ~= "Instance" then
		error("Unable to assign property Parent. Object expected, got " .. typeof(parent), 3)
	end
	local p = parent
	while p do
		if p == inst then
			error("Attempt to set " .. fullName(inst) .. " as its own parent", 3)
		end
		p = state[p].parent
	end
	if st.parent then
		local sib = state[st.parent].children
		for i, c in ipairs(sib) do
			if c == inst then
				table.remove(sib, i)
				break
			end
		end
	end
	st.parent = parent
	if parent then
		table.insert(state[parent].children, inst)
	end
end

InstanceMt.__newindex = function(inst, key, value)
	local st = state[inst]
	if key == "Parent" then
		local oldParent = st.parent
		setParent(inst, value)
		note(function()
			setParent(inst, oldParent)
		end)
		return
	elseif key == "ClassName" then
		error("Unable to assign property ClassName. Property is read only", 2)
	end
	local comp = lookup(st.className, "computed", key)
	if comp then
		if not comp.set then
			error("Unable to assign property " .. key .. ". Property is read only", 2)
		end
		return comp.set(inst, value)
	end
	local cur = st.props[key]
	if cur == nil then
		memberError(inst, key)
	end
	local hadRef = st.refs and st.refs[key]
	note(function()
		st.props[key] = cur
		if st.refs then
			st.refs[key] = hadRef
		end
	end)
	local want = cur == NILREF and "Instance" or typeof(cur)
	if st.refs and st.refs[key] then
		want = "Instance"
	end
	local nilType = nilTypes[cur] or (st.nilTyped and st.nilTyped[key])
	if nilType then
		if value ~= nil and typeof(value) ~= nilType then
			error("Unable to assign property " .. key .. ". " .. nilType .. " expected, got " .. typeof(value), 2)
		end
		st.nilTyped = st.nilTyped or {}
		st.nilTyped[key] = nilType
		st.props[key] = value == nil and M.nilOf(nilType) or value
		return
	end
	if want == "Instance" then
		if value ~= nil and typeof(value) ~= "Instance" then
			error("Unable to assign property " .. key .. ". Object expected, got " .. typeof(value), 2)
		end
		if st.refs == nil then
			st.refs = {}
		end
		st.refs[key] = true
		st.props[key] = value == nil and NILREF or value
		return
	end
	if typeof(value) ~= want then
		error("Unable to assign property " .. key .. ". " .. want .. " expected, got " .. typeof(value), 2)
	end
	if want == "EnumItem" and value.EnumType ~= cur.EnumType then
		error("Unable to assign property " .. key .. ". Enum." .. tostring(cur.EnumType) .. " expected", 2)
	end
	local store = lookup(st.className, "store", key)
	if store then
		value = store(value)
	end
	st.props[key] = value
	if st.changed then
		st.changed(inst, key, value)
	end
end

InstanceMt.__tostring = function(inst)
	return state[inst].props.Name
end

-- Creates an instance of className (no creatable check; Instance.new does that).
function M.create(className)
	local c = classes[className]
	if not c then
		error("Unable to create an Instance of type \"" .. tostring(className) .. "\"", 2)
	end
	local props = { Name = className, Archivable = true }
	local chain = {}
	while c do
		table.insert(chain, 1, c)
		c = c.super and classes[c.super]
	end
	for _, cls in ipairs(chain) do
		for k, v in pairs(cls.props) do
			props[k] = v
		end
	end
	local inst = setmetatable({}, InstanceMt)
	state[inst] = { className = className, props = props, children = {}, attrs = {}, tags = {}, tagOrder = {} }
	for _, cls in ipairs(chain) do
		if cls.init then
			cls.init(inst, state[inst])
		end
	end
	return inst
end

function M.new(className, parent)
	local c = classes[className]
	if not c or not c.creatable then
		error("Unable to create an Instance of type \"" .. tostring(className) .. "\"", 2)
	end
	local inst = M.create(className)
	if parent then
		inst.Parent = parent
	end
	return inst
end

---------------------------------------------------------------- Instance methods
local ATTRIBUTE_TYPES = {
	string = true, number = true, boolean = true, UDim = true, UDim2 = true, BrickColor = true,
	Color3 = true, Vector2 = true, Vector3 = true, CFrame = true, NumberSequence = true,
	ColorSequence = true, NumberRange = true, Rect = true, EnumItem = true, Font = true,
}

local function descendants(inst, out)
	for _, c in ipairs(state[inst].children) do
		table.insert(out, c)
		descendants(c, out)
	end
	return out
end

local function clone(inst, map)
	local st = state[inst]
	if not st.props.Archivable then
		return nil
	end
	local copy = M.create(st.className)
	local cst = state[copy]
	for k, v in pairs(st.props) do
		cst.props[k] = v
	end
	if st.refs then
		cst.refs = {}
		for k in pairs(st.refs) do
			cst.refs[k] = true
		end
	end
	for k, v in pairs(st.attrs) do
		cst.attrs[k] = v
	end
	for _, t in ipairs(st.tagOrder) do
		cst.tags[t] = true
		table.insert(cst.tagOrder, t)
	end
	cst.editorSource = st.editorSource
	map[inst] = copy
	for _, c in ipairs(st.children) do
		local cc = clone(c, map)
		if cc then
			setParent(cc, copy)
		end
	end
	return copy
end

-- Like Roblox, references that point inside the cloned subtree point at the copies.
local function cloneTree(inst)
	local map = {}
	local copy = clone(inst, map)
	for _, c in pairs(map) do
		local cst = state[c]
		for k in pairs(cst.refs or {}) do
			local target = cst.props[k]
			if target ~= NILREF and map[target] then
				cst.props[k] = map[target]
			end
		end
	end
	return copy
end

local base = {}
function base.GetChildren(self)
	local out = {}
	for i, c in ipairs(state[self].children) do
		out[i] = c
	end
	return out
end
function base.GetDescendants(self)
	return descendants(self, {})
end
function base.FindFirstChild(self, name, recursive)
	local list = recursive and descendants(self, {}) or state[self].children
	for _, c in ipairs(list) do
		if state[c].props.Name == name then
			return c
		end
	end
	return nil
end
function base.FindFirstChildOfClass(self, className)
	for _, c in ipairs(state[self].children) do
		if state[c].className == className then
			return c
		end
	end
	return nil
end
function base.FindFirstChildWhichIsA(self, className, recursive)
	local list = recursive and descendants(self, {}) or state[self].children
	for _, c in ipairs(list) do
		if isA(state[c].className, className) then
			return c
		end
	end
	return nil
end
function base.FindFirstAncestorWhichIsA(self, className)
	local p = state[self].parent
	while p do
		if isA(state[p].className, className) then
			return p
		end
		p = state[p].parent
	end
	return nil
end
function base.IsA(self, className)
	return isA(state[self].className, className)
end
function base.IsDescendantOf(self, other)
	local p = state[self].parent
	while p do
		if p == other then
			return true
		end
		p = state[p].parent
	end
	return false
end
function base.GetFullName(self)
	return fullName(self)
end
function base.Clone(self)
	return cloneTree(self)
end
function base.Destroy(self)
	local st = state[self]
	for _, c in ipairs(base.GetChildren(self)) do
		base.Destroy(c)
	end
	if st.parent then
		setParent(self, nil)
	end
	st.destroyed = true
end
function base.ClearAllChildren(self)
	for _, c in ipairs(base.GetChildren(self)) do
		base.Destroy(c)
	end
end
function base.GetAttribute(self, name)
	return state[self].attrs[name]
end
function base.GetAttributes(self)
	local out = {}
	for k, v in pairs(state[self].attrs) do
		out[k] = v
	end
	return out
end
function base.SetAttribute(self, name, value)
	-- As the engine: up to 100 characters, not starting with RBX; '.', '-' and '/' are allowed
	-- (Instance.yaml SetAttribute), spaces and other symbols are not.
	if type(name) ~= "string" or #name == 0 or #name > 100 or name:find("[^%w_%.%-/]") or name:sub(1, 3) == "RBX" then
		error("Attribute name \"" .. tostring(name) .. "\" is invalid: use up to 100 letters, digits and"
			.. " _ . - /, not starting with RBX", 2)
	end
	if value ~= nil and not ATTRIBUTE_TYPES[typeof(value)] then
		error(typeof(value) .. " is not a supported attribute type", 2)
	end
	local attrs = state[self].attrs
	local old = attrs[name]
	note(function()
		attrs[name] = old
	end)
	attrs[name] = value
end
function base.AddTag(self, tag)
	local st = state[self]
	if not st.tags[tag] then
		st.tags[tag] = true
		table.insert(st.tagOrder, tag)
		note(function()
			base.RemoveTag(self, tag)
		end)
	end
end
function base.RemoveTag(self, tag)
	local st = state[self]
	if st.tags[tag] then
		st.tags[tag] = nil
		for i, t in ipairs(st.tagOrder) do
			if t == tag then
				table.remove(st.tagOrder, i)
				break
			end
		end
		note(function()
			base.AddTag(self, tag)
		end)
	end
end
function base.HasTag(self, tag)
	return state[self].tags[tag] == true
end
function base.GetTags(self)
	local out = {}
	for i, t in ipairs(state[self].tagOrder) do
		out[i] = t
	end
	return out
end
function base.GetPivot(self)
	local st = state[self]
	if isA(st.className, "BasePart") then
		return st.props.CFrame
	end
	local pp = st.props.PrimaryPart
	if pp and pp ~= NILREF then
		return state[pp].props.CFrame
	end
	return st.props.WorldPivot or D.CFrame.new()
end

-- Moves a part (its CFrame) or a model (every part inside, keeping their offsets) to cf.
function base.PivotTo(self, cf)
	local st = state[self]
	if isA(st.className, "BasePart") then
		self.CFrame = cf
		return
	end
	local cur = base.GetPivot(self)
	local delta = cf * cur:Inverse()
	for _, d in ipairs(descendants(self, {})) do
		if isA(state[d].className, "BasePart") then
			d.CFrame = delta * d.CFrame
		end
	end
	if st.props.WorldPivot then
		st.props.WorldPivot = cf
	end
end

M.defineClass("Instance", { creatable = false, methods = base })
M.isA = isA
M.descendants = function(inst) return descendants(inst, {}) end

return M
